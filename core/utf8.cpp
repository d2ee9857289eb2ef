#include "core/utf8.hpp"

namespace tidings::core {

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

std::string cut_utf8(std::string value, std::size_t max_bytes) {
  if (value.size() <= max_bytes) return value;
  std::size_t n = max_bytes;
  // Back off over continuation bytes so no UTF-8 sequence is split.
  for (int i = 0; i < 3 && n > 0 && (static_cast<unsigned char>(value[n]) & 0xc0) == 0x80; ++i) --n;
  value.resize(n);
  value += "\u2026";
  return value;
}

}  // namespace tidings::core
