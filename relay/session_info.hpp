#pragma once

// One live SSE session as the admin API shows it (GET /admin/v1/sessions).
// Taken on the session's own thread (io_shard::list_sessions); it never
// carries the session's credential.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/stream_name.hpp"

namespace tidings::relay {

struct session_info {
  std::size_t shard = 0;
  std::uint64_t id = 0;  // unique within its shard
  std::string tenant;
  std::string subject;
  std::vector<core::stream_selector> streams;  // in the order the client named them
  std::size_t queue_frames = 0;
  std::size_t queue_bytes = 0;
  std::chrono::steady_clock::duration age{};
  std::string remote;  // "host:port" of the client; empty once the socket is gone
};

}  // namespace tidings::relay
