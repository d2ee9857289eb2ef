#include "core/cursor_vector.hpp"

namespace tidings::core {

std::string encode_cursor_vector(std::span<const cursor> cursors) {
  std::string out;
  for (std::size_t i = 0; i < cursors.size(); ++i) {
    if (i > 0) out += ',';
    out += format_cursor(cursors[i]);
  }
  return out;
}

std::optional<std::vector<cursor>> decode_cursor_vector(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::vector<cursor> out;
  for (;;) {
    auto comma = text.find(',');
    auto c = parse_cursor(text.substr(0, comma));
    if (!c) return std::nullopt;
    out.push_back(*c);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace tidings::core
