#pragma once

// The hub owns one stream: it assigns contiguous seqs, persists through the
// group committer, keeps a ring of recent encoded frames for fast resume,
// serves catch-up reads and fans committed batches out to I/O-thread sinks.
//
// A publish goes through two steps:
//
//   publish ──assign seqs, encode frames──> in flight ──committed──> ring,
//                                                                    fan-out,
//                                                                    reply
//
// Nothing is fanned out or acknowledged before it is durable, so a cursor a
// client has seen always survives a crash (under sync or batch durability).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/hub_actor.hpp"
#include "actors/probe.hpp"
#include "core/retention.hpp"
#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"

namespace tidings::actors {

struct hub_config {
  stream_key stream;
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  core::retention_policy retention;
  std::size_t ring_events = 1024;
  std::size_t ring_bytes = 1 << 20;
  // Called once, on the hub's thread, when its first publish creates the stream.
  std::function<void()> on_created;
  probe* metrics = nullptr;  // null: not measured (tests)
};

struct hub_state {
  static inline const char* name = "hub";

  // One write submitted to the group committer and not yet confirmed.
  struct in_flight {
    std::uint64_t token = 0;
    std::vector<frame_ptr> frames;  // empty for a trim-only write
    std::vector<core::cursor> cursors;
    std::function<void(publish_result)> reply;
    std::string idempotency_key;
    std::uint64_t first_seq_after = 0;  // retained range start once written
    std::chrono::steady_clock::time_point accepted_at{};
  };

  hub_config cfg;
  // Prospective metadata: includes writes still in flight. nullopt until the
  // first publish creates the stream.
  std::optional<persistence::stream_meta> meta;
  // What is durable and may be read or delivered.
  std::uint64_t committed_head = 0;
  std::uint64_t committed_first = 1;

  std::deque<frame_ptr> ring;
  std::size_t ring_bytes = 0;

  std::deque<in_flight> pending;
  std::uint64_t next_token = 1;
  // Idempotency keys whose first publish is in flight, with later duplicates.
  std::map<std::string, std::vector<std::function<void(publish_result)>>> keys_in_flight;

  std::unordered_map<fanout_sink*, std::pair<fanout_sink_ptr, std::size_t>> sinks;

  bool failed = false;  // a write failed: refuse further publishes
  bool trim_scheduled = false;

  // The ring's memory leaves the node-wide gauge with the hub.
  ~hub_state() {
    if (cfg.metrics && ring_bytes > 0) cfg.metrics->ring_bytes(-static_cast<std::int64_t>(ring_bytes));
  }
};

// Spawn with caf::actor_system::spawn(hub, cfg). Reads the stream's metadata
// from the store when it starts.
hub_actor::behavior_type hub(hub_actor::stateful_pointer<hub_state> self, hub_config cfg);

}  // namespace tidings::actors
