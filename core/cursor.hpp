#pragma once

// A cursor names one event of one stream: "<epoch>:<seq>". The epoch is the
// random 64-bit id of the stream's current log, always printed as 16 lowercase
// hex digits; seq counts from 1 within the epoch. Seq 0 means "before the
// first event". Epoch 0 is reserved for "stream not created yet".

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidings::core {

struct cursor {
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;
  auto operator<=>(const cursor&) const = default;
};

// 16 lowercase hex digits.
std::string format_epoch(std::uint64_t epoch);
// Exactly 16 lowercase hex digits; nothing else.
std::optional<std::uint64_t> parse_epoch(std::string_view text);

std::string format_cursor(cursor c);
// Strict, the form format_cursor prints: epoch as above, one ':', a decimal
// seq without leading zeros that fits in 64 bits. No sign, no whitespace,
// nothing trailing.
std::optional<cursor> parse_cursor(std::string_view text);

}  // namespace tidings::core
