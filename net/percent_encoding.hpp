#pragma once

// Percent-encoding of a URL component (RFC 3986 section 2.1): what goes into
// a request target built from values (a Kubernetes selector, a resource
// template's variable).

#include <string>
#include <string_view>

namespace tidings::net {

// `s` with every byte but the unreserved characters (ALPHA DIGIT - . _ ~)
// and those in `keep` written as %XX (upper-case hex).
std::string percent_encode(std::string_view s, std::string_view keep = "");

}  // namespace tidings::net
