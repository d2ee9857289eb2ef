// core/sse_parser.hpp: what the CLI and the load tool read from a server
// (possibly not ours). Invariants: however the bytes are split into chunks,
// the same messages come out and the parser ends in the same state; messages
// stay within the size limit and their fields hold no line breaks.
// Input: the first byte picks the size limit and the chunking; the rest is
// the stream.

#include <string>
#include <vector>

#include "core/sse_parser.hpp"
#include "fuzz_check.hpp"

using namespace tidings;

namespace {

struct outcome {
  std::vector<core::sse_message> messages;
  bool failed = false;
  std::string last_event_id;
  std::optional<int> retry_ms;
};

bool same_message(const core::sse_message& a, const core::sse_message& b) {
  return a.event == b.event && a.data == b.data && a.id == b.id;
}

// Feeds `stream` in chunks whose sizes cycle through `sizes`.
outcome parse(std::string_view stream, std::size_t max_bytes, const std::vector<std::size_t>& sizes) {
  outcome out;
  core::sse_parser parser(max_bytes);
  auto collect = [&](core::sse_message&& m) { out.messages.push_back(std::move(m)); };
  std::size_t i = 0;
  while (!stream.empty()) {
    std::size_t n = std::min(stream.size(), sizes[i++ % sizes.size()]);
    bool ok = parser.feed(stream.substr(0, n), collect);
    FUZZ_CHECK(ok == !parser.failed());
    stream.remove_prefix(n);
  }
  out.failed = parser.failed();
  out.last_event_id = parser.last_event_id();
  out.retry_ms = parser.retry_ms();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::uint8_t control = data[0];
  std::string_view stream = fuzz::as_text(data + 1, size - 1);
  // Small limits reach the failure path; the default is the real one.
  std::size_t max_bytes = (control & 0x80) ? std::size_t{1} << 20 : 1 + (control & 0x1f) * 8u;

  outcome whole = parse(stream, max_bytes, {stream.size() + 1});
  outcome bytewise = parse(stream, max_bytes, {1});
  outcome mixed = parse(stream, max_bytes, {1u + ((control >> 5) & 3u), 7, 2, 13});

  for (const outcome* other : {&bytewise, &mixed}) {
    FUZZ_CHECK(other->failed == whole.failed);
    FUZZ_CHECK(other->last_event_id == whole.last_event_id);
    FUZZ_CHECK(other->retry_ms == whole.retry_ms);
    FUZZ_CHECK(other->messages.size() == whole.messages.size());
    for (std::size_t i = 0; i < whole.messages.size(); ++i)
      FUZZ_CHECK(same_message(other->messages[i], whole.messages[i]));
  }
  for (const auto& m : whole.messages) {
    FUZZ_CHECK(m.data.size() + m.event.size() <= max_bytes);
    FUZZ_CHECK(m.event.find_first_of("\r\n") == std::string::npos);
    FUZZ_CHECK(m.data.find('\r') == std::string::npos);
    if (m.id) FUZZ_CHECK(m.id->find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
  }
  FUZZ_CHECK(!whole.retry_ms || *whole.retry_ms >= 0);
  return 0;
}
