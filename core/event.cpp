#include "core/event.hpp"

namespace tidings::core {

namespace {

// Decodes one UTF-8 sequence at `pos`; returns its length, or 0 when it is
// malformed (truncated, overlong, a surrogate or past U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t pos, std::uint32_t* code_point) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char lead = byte(pos);
  std::size_t len = 0;
  std::uint32_t cp = 0;
  std::uint32_t min = 0;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xe0) == 0xc0) {
    len = 2, cp = lead & 0x1f, min = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    len = 3, cp = lead & 0x0f, min = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    len = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (pos + len > s.size()) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    unsigned char next = byte(pos + i);
    if ((next & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (next & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *code_point = cp;
  return len;
}

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
