#pragma once

// Standard base64 (RFC 4648 section 4, with padding): etcd's JSON gateway
// carries every key and value this way.

#include <optional>
#include <string>
#include <string_view>

namespace tidings::net {

std::string base64_encode(std::string_view bytes);
// nullopt for anything that is not canonical padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace tidings::net
