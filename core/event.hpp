#pragma once

// One change inside a stream, as accepted from a publisher.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidings::core {

inline constexpr std::string_view default_event_path = "/";
inline constexpr std::string_view default_event_type = "CHANGED";
inline constexpr std::size_t max_path_bytes = 1024;
inline constexpr std::size_t max_type_bytes = 64;

struct event {
  std::string path{default_event_path};
  std::string type{default_event_type};
  std::string data_json = "null";  // compact, valid JSON text
  std::int64_t time_ms = 0;        // when the broker accepted it (unix ms)
};

// Each returns a reason when the value is not acceptable.
// path: starts with '/', at most max_path_bytes, valid UTF-8, no control chars.
std::optional<std::string> check_event_path(std::string_view path);
// type: 1 to max_type_bytes of [A-Za-z0-9_.-].
std::optional<std::string> check_event_type(std::string_view type);

}  // namespace tidings::core
