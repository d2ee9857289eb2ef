#pragma once

// Shared by the libFuzzer targets: an invariant check that stays on in every
// build type (assert is compiled out with NDEBUG) and aborts, which libFuzzer
// reports as a crash with the input that caused it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/utf8.hpp"

#define FUZZ_CHECK(condition)                                                                \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

namespace tidings::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline bool valid_utf8(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    std::uint32_t cp = 0;
    std::size_t len = core::utf8_sequence(text, pos, &cp);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

}  // namespace tidings::fuzz
