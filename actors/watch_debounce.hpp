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

#include <cstdint>
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
  hub_actor notices;  // hub of watch:<name>
  persistence::group_committer* committer = nullptr;
  watch_stats_ptr stats;
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
  std::uint64_t next_publish = 1;
  std::size_t publishes_in_flight = 0;
  bool save_in_flight = false;
  std::optional<actor_task> on_flushed;  // set once a flush (stop) was asked for
  bool save_on_flush = false;            // that flush publishes: the position goes with it
  std::string fail;                      // the watch ends with this error once its last notice is out
};

watch_debounce_actor::behavior_type watch_debounce(
    watch_debounce_actor::stateful_pointer<watch_debounce_state> self, watch_debounce_config cfg);

}  // namespace tidings::actors
