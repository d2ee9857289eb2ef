// core/cursor_vector.hpp: the SSE id of a multi-stream connection, which comes
// back untrusted as Last-Event-ID. Invariants: a decoded vector is non-empty
// and re-encodes to the very same text; any vector survives encode/decode.

#include <cstring>
#include <string>
#include <vector>

#include "core/cursor_vector.hpp"
#include "fuzz_check.hpp"

using namespace tidings;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);

  if (auto cursors = core::decode_cursor_vector(text)) {
    FUZZ_CHECK(!cursors->empty());
    std::string encoded = core::encode_cursor_vector(*cursors);
    FUZZ_CHECK(encoded == text);
    FUZZ_CHECK(core::decode_cursor_vector(encoded) == cursors);
  }

  // The bytes as cursors, 16 each.
  std::vector<core::cursor> cursors(size / 16);
  for (std::size_t i = 0; i < cursors.size(); ++i) {
    std::memcpy(&cursors[i].epoch, data + 16 * i, 8);
    std::memcpy(&cursors[i].seq, data + 16 * i + 8, 8);
  }
  std::string encoded = core::encode_cursor_vector(cursors);
  auto decoded = core::decode_cursor_vector(encoded);
  if (cursors.empty()) {
    FUZZ_CHECK(!decoded);  // empty text is no cursor vector
  } else {
    FUZZ_CHECK(decoded == cursors);
  }
  return 0;
}
