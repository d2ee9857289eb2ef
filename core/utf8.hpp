#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tidings::core {

// Decodes one UTF-8 sequence at `pos`; returns its length, or 0 when it is
// malformed (truncated, overlong, a surrogate or past U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t pos, std::uint32_t* code_point);

// `value` cut to at most `max_bytes` plus "…" when longer, never inside a
// UTF-8 sequence.
std::string cut_utf8(std::string value, std::size_t max_bytes);

}  // namespace tidings::core
