#pragma once

// One watch's intake and filter: reads the watched stream from its cursor
// (catch-up pages, then live batches), turns each event into extracted events
// (core/stream_read), runs the Lua filter on each and hands the lines to the
// watch's debounce actor. Spawned detached, so a slow filter holds only its
// own thread, never the scheduler's.
//
//   prepare ──> (baseline or restored position, filter compiled, dry run)
//   go ──> catching_up ──caught_up──> live ──overflow──> catching_up
//                 └──────────resync──> new baseline, a RESYNC line, catching_up

#include <memory>
#include <set>
#include <string>

#include "actors/hub_registry.hpp"
#include "actors/stream_resources.hpp"
#include "actors/watch_actors.hpp"
#include "actors/watch_feed.hpp"
#include "core/stream_read.hpp"
#include "core/watch_uri.hpp"

namespace tidings::actors {

struct watch_filter_config {
  persistence::watch_spec spec;
  core::stream_uri uri;
  // Set when the watch reads a source's stream (src:<hash>): its events are
  // changes already extracted by the source, and this is the source's shape.
  std::string source_shape;
  watch_limits limits;
  persistence::store* store = nullptr;
  hub_registry* hubs = nullptr;
  watch_debounce_actor debounce;
  watch_stats_ptr stats;
};

struct watch_filter_state {
  static inline const char* name = "watch_filter";

  watch_filter_config cfg;
  std::unique_ptr<stream_resources> resources;
  std::unique_ptr<filters::lua_filter> filter;

  core::path_reads reads;
  // Paths changed since the last position handed on; all of them after a
  // new baseline (reset).
  std::set<std::string, std::less<>> dirty;
  bool reset = true;

  core::cursor cursor;  // the last event processed (epoch 0: stream not created yet)
  stream_actor hub;
  std::shared_ptr<watch_feed> feed;
  // The hub and feed to unsubscribe when the actor ends, shared with a
  // functor that outlives this state.
  std::shared_ptr<std::pair<stream_actor, fanout_sink_ptr>> registered =
      std::make_shared<std::pair<stream_actor, fanout_sink_ptr>>();
  std::uint64_t feed_generation = 0;
  bool live = false;
};

watch_filter_actor::behavior_type watch_filter(watch_filter_actor::stateful_pointer<watch_filter_state> self,
                                               watch_filter_config cfg);

}  // namespace tidings::actors
