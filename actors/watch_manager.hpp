#pragma once

// Starts, lists, stops and restores the watches of every tenant on this node.
// A start is a few asynchronous steps, each ending in a task message back to
// this actor, so the manager never blocks:
//
//   start ──> spawn filter + debounce ──> filter prepares (baseline, compile,
//   dry run) ──> [replacing: old debounce flushes] ──> spec and position
//   written ──> filter goes live ──> reply
//
// Any failing step ends both new actors and replies with the error; a watch
// being replaced keeps running until its successor has prepared.

#include <functional>
#include <map>
#include <set>

#include "actors/hub_registry.hpp"
#include "actors/source_registry_actor.hpp"
#include "actors/watch_actors.hpp"
#include "persistence/group_commit.hpp"

namespace tidings::actors {

struct watch_manager_config {
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  hub_registry* hubs = nullptr;
  watch_limits limits;
  // Where URIs other than stream:// go (issue 4); null: only stream:// watches.
  source_registry_actor sources;
};

struct watch_entry {
  persistence::watch_spec spec;
  watch_filter_actor filter;
  watch_debounce_actor debounce;
  watch_stats_ptr stats;
  std::string state;  // running, stopping, failed, restore_failed, moving (released to another member)
  std::string error;
  source_lease_ptr lease;  // a watch on an upstream source keeps it subscribed
  std::string stream;      // the stream it reads (its progress is kept per stream)
};

struct watch_manager_state {
  static inline const char* name = "watch_manager";

  watch_manager_config cfg;
  std::map<persistence::watch_id, watch_entry> watches;
  std::set<persistence::watch_id> starting;
  // Watches whose notice stream this node keeps (pinned in the hub
  // registry) while it runs, starts or lists them (sync_pin).
  std::set<persistence::watch_id> pinned;
  // Actors not yet down. Shutdown waits for the debounces only: a filter
  // never writes, and one stuck in a Lua C function cannot be waited for.
  std::set<caf::actor_addr> filters;
  std::set<caf::actor_addr> debounces;
  // What to do when a child dies while a step waits on it (its prepare
  // reply or its flush), so no start or stop can wait forever.
  std::map<caf::actor_addr, std::function<void(const caf::error&)>> on_child_down;
  bool shutting_down = false;
  bool restored = false;  // every stored spec was started or listed as failed
};

watch_manager_actor::behavior_type watch_manager(
    watch_manager_actor::stateful_pointer<watch_manager_state> self, watch_manager_config cfg);

// The tenant stream where lifecycle notices (the restore notice) go.
inline constexpr std::string_view watch_events_stream = "watches";

}  // namespace tidings::actors
