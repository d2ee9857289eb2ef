#pragma once

// One watch's dedupe and debounce: collects the filter's lines in a
// core::notice_batcher and, when they are due, publishes one notice to the
// stream watch:<name> together with the watch's position, in one write. So a
// notice and the cursor it covers are durable together: after a crash the
// watch resumes from the last committed notice and produces the rest once.
//
// When the filter drops everything, the position is saved on its own (one
// write in flight at a time, never while a notice is in flight, so a stale
// position can never overwrite a newer one).
//
// Notices are stored one at a time, in order. One the stream refuses for
// now (in a cluster: a failover in progress, too few in-sync replicas) or
// whose write is uncertain is sent again, with the same Idempotency-Key,
// after a growing pause, before any later one: the watch waits for its
// stream instead of failing, and no notice is stored twice or out of order.
// A stop or move drops what waits (with the position it carried, which is
// not stored either), except a notice that may be stored, which it tries
// for a while longer.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "actors/hub_actor.hpp"
#include "actors/watch_actors.hpp"
#include "persistence/group_commit.hpp"

namespace tidings::actors {

struct watch_debounce_config {
  persistence::watch_id id;
  std::string uri;
  std::string stream;  // the watched stream (for the stored progress)
  core::debounce_policy policy;
  // The hub of watch:<name> now, asked at every send: in a cluster a
  // fenced hub is replaced by one that takes the log over.
  std::function<stream_actor()> notices;
  // Stores a position written without a notice (the group committer's
  // submit; a test's stand-in).
  std::function<void(persistence::write_set, persistence::group_committer::callback)> save;
  watch_stats_ptr stats;
};

// Notices not yet stored, oldest first; only the front is with the hub.
struct notice_outbox {
  struct entry {
    std::uint64_t id = 0;
    publish_request notice;  // copied for each try: the hub takes what it is sent
    std::size_t lines = 0;
    std::string covers;  // the watched stream's cursor it leaves the watch at
    // An answer said it may be stored (with its position): it is never
    // dropped on a stop before an answer says whether it was.
    bool maybe_stored = false;
    std::chrono::steady_clock::time_point sent_at{};  // its latest try
    // Set by the first reply that says it is stored: a notice answered
    // twice (its key replayed) is counted and logged once.
    std::shared_ptr<std::atomic<bool>> stored = std::make_shared<std::atomic<bool>>(false);
  };
  std::deque<entry> queue;
  bool sent = false;                  // the front awaits the hub's answer
  std::chrono::milliseconds pause{};  // before the front is sent again
  std::uint64_t next_id = 1;
  std::string key_prefix;  // this actor's Idempotency-Keys: one per notice
  // Set when a stop or move began: until then a notice that may be stored
  // is tried again; past it, it is dropped like any other.
  std::optional<std::chrono::steady_clock::time_point> give_up_at;
};

struct watch_debounce_state {
  static inline const char* name = "watch_debounce";

  watch_debounce_config cfg;
  core::notice_batcher batcher;
  std::optional<watch_position> latest;  // from the filter's last output
  core::cursor saved;                    // newest position written or in flight
  // Path states changed since the last position written (merged from every
  // output since), and whether the stored set must be replaced.
  std::map<std::string, persistence::path_state> unsaved_paths;
  bool unsaved_reset = false;

  std::uint64_t timer_generation = 0;
  bool timer_armed = false;
  notice_outbox outbox;
  bool save_in_flight = false;
  std::optional<actor_task> on_flushed;  // set once a flush (stop) was asked for
  bool save_on_flush = false;            // that flush publishes: the position goes with it
  std::string fail;                      // the watch ends with this error once its last notice is out
};

watch_debounce_actor::behavior_type watch_debounce(
    watch_debounce_actor::stateful_pointer<watch_debounce_state> self, watch_debounce_config cfg);

}  // namespace tidings::actors
