// core/cursor.hpp: cursors arrive in query strings (?after=, ?since=) and
// Last-Event-ID. Invariants: a parsed cursor or epoch has exactly one
// spelling, the one format_* prints, and every cursor survives a round trip.

#include <cstring>
#include <string>

#include "core/cursor.hpp"
#include "fuzz_check.hpp"

using namespace tidings;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);

  if (auto c = core::parse_cursor(text)) {
    std::string formatted = core::format_cursor(*c);
    FUZZ_CHECK(formatted == text);
    FUZZ_CHECK(core::parse_cursor(formatted) == c);
  }
  if (auto epoch = core::parse_epoch(text)) {
    FUZZ_CHECK(core::format_epoch(*epoch) == text);
  }

  // Any 16 bytes are a cursor: it prints in the strict form and parses back.
  if (size >= 16) {
    core::cursor c;
    std::memcpy(&c.epoch, data, 8);
    std::memcpy(&c.seq, data + 8, 8);
    std::string formatted = core::format_cursor(c);
    FUZZ_CHECK(core::parse_cursor(formatted) == c);
    FUZZ_CHECK(core::parse_epoch(core::format_epoch(c.epoch)) == c.epoch);
  }
  return 0;
}
