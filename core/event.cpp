#include "core/event.hpp"

#include <algorithm>
#include <string>

#include "core/utf8.hpp"

namespace tidings::core {

namespace {

bool control_code_point(std::uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

bool type_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
         ch == '.' || ch == '-';
}

}  // namespace

std::optional<std::string> check_event_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return "path must start with '/'";
  if (path.size() > max_path_bytes) return "path is longer than " + std::to_string(max_path_bytes) + " bytes";
  for (std::size_t pos = 0; pos < path.size();) {
    std::uint32_t cp = 0;
    std::size_t len = utf8_sequence(path, pos, &cp);
    if (len == 0) return "path is not valid UTF-8";
    if (control_code_point(cp)) return "path contains a control character";
    pos += len;
  }
  // A grant on /a/** must not cover /a/../b: paths are matched as written,
  // so a '.' or '..' segment (also as %2e) is refused, not resolved.
  for (std::size_t start = 1; start <= path.size();) {
    auto end = std::min(path.find('/', start), path.size());
    auto segment = path.substr(start, end - start);
    if (segment.size() <= 6) {
      std::string plain;
      for (std::size_t i = 0; i < segment.size(); ++i) {
        if (segment[i] == '%' && i + 2 < segment.size() && segment[i + 1] == '2' &&
            (segment[i + 2] == 'e' || segment[i + 2] == 'E')) {
          plain += '.';
          i += 2;
        } else {
          plain += segment[i];
        }
      }
      if (plain == "." || plain == "..")
        return "path must not hold a '.' or '..' segment (it is not resolved; name the path itself)";
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> check_event_type(std::string_view type) {
  if (type.empty()) return "type must not be empty";
  if (type.size() > max_type_bytes) return "type is longer than " + std::to_string(max_type_bytes) + " bytes";
  for (char ch : type)
    if (!type_char(ch)) return "type may only contain [A-Za-z0-9_.-]";
  return std::nullopt;
}

}  // namespace tidings::core
