#pragma once

// What a watch may name. Until upstream sources exist, a watch reads a
// Tidings stream: `stream://NAME` or `stream://NAME/path/prefix`.

#include <optional>
#include <string>
#include <string_view>

namespace tidings::core {

inline constexpr std::string_view stream_uri_scheme = "stream://";

// [a-z0-9][a-z0-9._-]{0,63}; the watch's notices go to "watch:<name>".
bool valid_watch_name(std::string_view name);
std::string watch_notice_stream(std::string_view watch_name);

struct stream_uri {
  std::string stream;
  std::string prefix;  // "" (every path) or starting with '/'
};

// Whether the URI is a Tidings stream's (stream://...); any other URI with a
// scheme names an upstream resource, routed to a source (issue 4).
bool is_stream_uri(std::string_view uri);
// "scheme://..." or "scheme:..." with a scheme of RFC 3986's characters.
bool has_uri_scheme(std::string_view uri);

// The parsed URI, or a reason it cannot be watched in *error.
std::optional<stream_uri> parse_stream_uri(std::string_view uri, std::string* error);

}  // namespace tidings::core
