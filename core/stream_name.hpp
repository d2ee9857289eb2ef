#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tidings::core {

// What a watch's notice stream and a source's stream are named by.
inline constexpr std::string_view watch_stream_prefix = "watch:";
inline constexpr std::string_view source_stream_prefix = "src:";

// [a-z0-9][a-z0-9._-]{0,127}
bool valid_stream_name(std::string_view name);
// A valid name, or "watch:" or "src:" and a valid name (a watch's notices, a
// source's events): readable, not publishable.
bool readable_stream_name(std::string_view name);

// One `stream=` parameter of the SSE route: NAME, or NAME:PREFIX where PREFIX
// starts with '/'. The split is at the first ":/" so later stream names that
// contain ':' (watch:NAME) stay unambiguous.
struct stream_selector {
  std::string stream;
  std::string prefix;  // empty: every path
};
std::optional<stream_selector> parse_stream_selector(std::string_view text);

}  // namespace tidings::core
