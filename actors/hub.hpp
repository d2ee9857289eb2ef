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
//
// With replication (ADR 0017) "durable" means here and on the write quorum
// of followers: each write is shipped to the log shipper as it is
// submitted, and a publish completes once both have confirmed it. The hub's
// term begins when it starts serving as the owner (`active`); a shipper that
// finds a newer term elsewhere fences the hub, which then answers nothing
// more and is replaced.

#include <chrono>
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

class hub_registry;

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
  // Where work goes once the stream has moved to another owner (cluster).
  hub_registry* registry = nullptr;
  // This node took the stream over from a member that was lost: a cursor of
  // an epoch it does not have is answered `owner_changed`.
  bool taken_over = false;
  // Cluster: hold publishes and fetches until adopt_atom (see hub_actor).
  bool await_handoff = false;
  // Replication: spawns this hub's log shipper (unset: none), this node's
  // member id, and how long a write may wait for its followers before its
  // publisher is told to retry.
  std::function<std::optional<replicator_actor>(replication_sink_actor)> replicator;
  std::string node_id;
  std::chrono::milliseconds replication_timeout{5000};
  // How long the hub of a stream that does not exist waits for a first
  // subscriber (one admitted whose session then failed never comes) before
  // the registry releases it; the last subscriber leaving releases it at once.
  std::chrono::milliseconds unknown_grace{5000};
  // An existing stream's hub idle this long (no session, no publish, no
  // fetch, nothing under way) is released; 0: never (hub_defaults).
  std::chrono::milliseconds idle_release{0};
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
    std::uint64_t head_after = 0;       // the log's head once written
    std::chrono::steady_clock::time_point accepted_at{};
    bool durable = false;  // the local write is done (see error)
    std::string error;     // the local write failed
  };

  hub_config cfg;
  // Prospective metadata: includes writes still in flight. nullopt until the
  // first publish creates the stream.
  std::optional<persistence::stream_meta> meta;
  // What is durable and may be read or delivered.
  std::uint64_t committed_head = 0;
  std::uint64_t committed_first = 1;
  // Trimmed events below this are deleted from the store (0: unknown, as
  // after a restart); deletes go in chunks (core::physical_trim_due).
  std::uint64_t deleted_below = 0;

  std::deque<frame_ptr> ring;
  std::size_t ring_bytes = 0;

  std::deque<in_flight> pending;
  std::uint64_t next_token = 1;
  // Idempotency keys whose first publish is in flight, with later duplicates.
  std::map<std::string, std::vector<std::function<void(publish_result)>>> keys_in_flight;

  std::unordered_map<fanout_sink*, std::pair<fanout_sink_ptr, std::size_t>> sinks;

  bool failed = false;  // a write failed: refuse further publishes
  bool moved = false;   // owned elsewhere now: forward, never serve
  // Waiting for a handoff (or writing one): requests wait here, in order.
  bool awaiting = false;
  std::vector<publish_request_ptr> held_publishes;
  std::string hold_reason;  // awaiting, and no member can serve the log yet: publishes get this
  std::vector<fetch_request_ptr> held_fetches;
  std::vector<caf::typed_response_promise<bool>> quiesce_waiters;
  std::function<void()> adopted_callback;
  std::optional<persistence::stream_meta> adopting;
  bool trim_scheduled = false;
  // Idle release: the last publish, fetch or session leaving; an idle_atom
  // is on its way; the registry dropped this hub (it ends soon after).
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  bool idle_armed = false;
  bool released = false;

  // Replication (ADR 0017).
  std::optional<replicator_actor> replicator;
  bool active = false;  // serving as the owner: its term began
  std::uint64_t term = 0;
  std::uint64_t replicated = 0;  // the write quorum holds the log up to here
  bool writable = true;          // as the shipper last said
  bool writable_soon = false;    // not yet: a follower is catching up
  std::string unwritable;        // why not
  // Publishes waiting for writable (writable_soon), with when they came;
  // answered 503 after replication_timeout.
  std::deque<std::pair<publish_request_ptr, std::chrono::steady_clock::time_point>> held_unwritable;
  bool fenced = false;           // a newer term exists: replaced
  std::uint64_t prior_term = 0;  // of a follower's copy dropped for a new epoch
  bool stall_timer = false;      // armed while writes wait for followers
  // The followers have answered in this term (see confirmed_atom); fetches
  // past the head wait here until then.
  bool confirmed = true;
  std::vector<fetch_request_ptr> held_ahead;

  // The ring's memory leaves the node-wide gauge with the hub.
  ~hub_state() {
    if (cfg.metrics && ring_bytes > 0) cfg.metrics->ring_bytes(-static_cast<std::int64_t>(ring_bytes));
  }
};

// Spawn with caf::actor_system::spawn(hub, cfg). Reads the stream's metadata
// from the store when it starts.
hub_actor::behavior_type hub(hub_actor::stateful_pointer<hub_state> self, hub_config cfg);

}  // namespace tidings::actors
