#pragma once

// One tidingsd process: the store, the group committer, the actor system with
// its hubs, the I/O shards and the front door, started and stopped in order.

#include "broker/config.hpp"

namespace tidings::broker {

// Runs until SIGTERM or SIGINT, then drains: every SSE session gets
// `closing`, pending writes are flushed, and it returns 0. Returns non-zero
// (after logging why) when the node cannot start.
int run_node(const config& cfg);

}  // namespace tidings::broker
