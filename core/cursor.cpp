#include "core/cursor.hpp"

#include <limits>

#include "core/hex.hpp"

namespace tidings::core {

namespace {

// 1 to 20 decimal digits, no leading zero; nullopt when the value does not
// fit in 64 bits.
std::optional<std::uint64_t> parse_seq(std::string_view text) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  constexpr auto max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    auto digit = static_cast<std::uint64_t>(ch - '0');
    if (value > (max - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace

std::string format_epoch(std::uint64_t epoch) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = digits[epoch & 0xf];
    epoch >>= 4;
  }
  return out;
}

std::optional<std::uint64_t> parse_epoch(std::string_view text) {
  // Exactly the form we print: one spelling per epoch, so a cursor can be
  // compared or logged as text.
  if (text.size() != 16) return std::nullopt;
  std::uint64_t value = 0;
  for (char ch : text) {
    int digit = hex_digit_value(ch);
    if (digit < 0 || (ch >= 'A' && ch <= 'F')) return std::nullopt;
    value = (value << 4) | static_cast<std::uint64_t>(digit);
  }
  return value;
}

std::string format_cursor(cursor c) {
  std::string out = format_epoch(c.epoch);
  out += ':';
  out += std::to_string(c.seq);
  return out;
}

std::optional<cursor> parse_cursor(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto epoch = parse_epoch(text.substr(0, colon));
  if (!epoch) return std::nullopt;
  auto seq = parse_seq(text.substr(colon + 1));
  if (!seq) return std::nullopt;
  return cursor{*epoch, *seq};
}

}  // namespace tidings::core
