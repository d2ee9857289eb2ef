#pragma once

// Server side of the SSE wire format (DESIGN.md "SSE wire format").

#include <cstdint>
#include <string>
#include <string_view>

#include "core/cursor.hpp"
#include "core/event.hpp"

namespace tidings::core {

// "data: <line>\n" for every line of `payload`. "\r\n", "\r" and "\n" all end
// a line, so no payload can end the event early or inject a field.
void append_data_lines(std::string& out, std::string_view payload);

// A whole SSE event ending in the blank line. Empty `id` or `name` leaves
// that field out. `id` and `name` must not contain line breaks (they are
// produced by us); a line break in either is replaced by a space.
std::string sse_event(std::string_view id, std::string_view name, std::string_view data);

// The JSON a data event carries:
// {"stream":S,"cursor":C,"path":P,"type":T,"time":MS,"data":<data_json>}
std::string event_json(std::string_view stream, cursor c, const event& e);

// One event of one stream encoded once and shared by every session.
// `bytes` is "id: <cursor>\n" followed by the body ("data: ...\n\n");
// `body_offset` is where the body starts, so a multi-stream session can write
// its own id line followed by the shared body.
struct sse_frame {
  std::uint64_t seq = 0;
  std::string path;
  std::string bytes;
  std::size_t body_offset = 0;

  std::string_view body() const { return std::string_view(bytes).substr(body_offset); }
};
sse_frame make_sse_frame(std::string_view stream, cursor c, const event& e);

// `retry: 2000` and the blank line, sent first on every SSE response.
std::string sse_retry(int retry_ms);

}  // namespace tidings::core
