#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "core/cursor.hpp"
#include "core/stream_name.hpp"
#include "relay/session_guard.hpp"

namespace tidings::relay {

struct sse_options {
  std::chrono::milliseconds heartbeat{20000};
  std::size_t queue_frames = 4096;  // per session; beyond: resync slow_consumer
  std::size_t queue_bytes = 8 << 20;
  int retry_ms = 2000;
  std::size_t page_frames = 256;        // catch-up read size
  std::size_t write_bytes = 256 << 10;  // most bytes coalesced into one write
  // A session that wrote less than this long ago waits out the rest of it
  // before writing again, so a busy stream costs one write per window rather
  // than one per event. An idle session writes at once.
  std::chrono::microseconds coalesce{1000};
  std::chrono::milliseconds close_deadline{5000};  // a terminal frame's write
};

// A validated SSE request: which streams, and where to resume each.
struct sse_request {
  std::string tenant = "default";
  std::string subject;  // who connected (the admin views show it)
  std::vector<core::stream_selector> streams;
  std::optional<std::vector<core::cursor>> resume;  // one per stream when set
  // Kept as long as the session lives: the leases of the sources it reads,
  // its connection and session slots.
  std::vector<std::shared_ptr<const void>> holds;
  // Null: every event is written (tests, the no-auth mode may also pass one).
  std::shared_ptr<session_guard> guard;
  // Extra response header lines ("Name: value\r\n"), e.g. CORS.
  std::string extra_headers;
};

}  // namespace tidings::relay
