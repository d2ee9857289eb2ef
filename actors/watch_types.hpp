#pragma once

// Values passed between the watch manager, a watch's filter and debounce
// actors, and the HTTP front door. Local to one process.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/messages.hpp"
#include "core/notice_batcher.hpp"
#include "filters/lua_filter.hpp"
#include "persistence/watch_records.hpp"

namespace tidings::actors {

struct watch_limits {
  std::size_t max_watches_per_tenant = 5;
  std::size_t max_events_per_update = 100;
  // How far back from the head a watch looks for the baseline of each path.
  std::size_t baseline_scan_events = 10000;
  // Deliveries queued for a filter before it stops taking live batches and
  // catches up page by page instead.
  std::size_t max_queued_frames = 4096;
  filters::filter_limits filter;
};

// Counters one watch's actors update and the watch list reads.
struct watch_stats {
  std::atomic<std::uint64_t> events{0};   // extracted events run through the filter
  std::atomic<std::uint64_t> notices{0};  // notices committed to watch:<name>
  std::atomic<std::uint64_t> filter_errors{0};
  std::atomic<int> shape{0};  // core::read_kind, or -1 before anything was read
  // Why the watch's notices wait to be stored (its stream takes no writes
  // right now: a failover, too few in-sync replicas), or null while they
  // flow. The listing shows it.
  std::atomic<std::shared_ptr<const std::string>> notices_wait;
};
using watch_stats_ptr = std::shared_ptr<watch_stats>;

enum class watch_error_kind {
  bad_request,  // the spec can never start (bad URI, bad filter): 400
  over_limit,   // the tenant holds the most watches it may: 409
  busy,         // the same name is being started or stopped right now: 409
  unavailable,  // storage failed, or a cap on unknown streams: may work later
  upstream,     // the upstream refused or failed the subscription or its first read: 502
};

struct watch_error {
  watch_error_kind kind = watch_error_kind::bad_request;
  std::string message;
};

// Where a watch stands after processing some events: every event up to
// `cursor` is reflected in `paths` (shared, rebuilt only when it changes).
struct watch_position {
  core::cursor cursor;
  // The paths whose state changed since the previous position (every path
  // when `reset`): storing a position writes only what changed.
  std::shared_ptr<const std::vector<persistence::path_state>> changed;
  bool reset = false;  // a new baseline: the stored paths are replaced
  std::string shape;   // as watch_progress::shape
};

// Lines a filter produced from some events, and where that leaves it.
struct watch_output {
  std::vector<std::pair<std::string, std::string>> lines;  // object key, line
  watch_position position;
  // Set when the watch cannot go on (its source failed): the lines go out
  // at once, then the watch ends, listed as failed with this reason.
  std::string fail;
};
using watch_output_ptr = std::shared_ptr<const watch_output>;

// --- the filter actor's start -------------------------------------------------

struct watch_prepare_result {
  std::optional<watch_error> error;
  std::string shape;
  // Where the filter starts; written with the spec by the manager.
  watch_position position;
};

struct watch_prepare_request {
  // Restore: resume from the stored progress instead of a fresh baseline.
  std::optional<persistence::watch_progress> progress;
  bool dry_run = true;  // run the filter on a sample event
  std::function<void(watch_prepare_result)> reply;
};
using watch_prepare_request_ptr = std::shared_ptr<watch_prepare_request>;

// --- the manager's API ----------------------------------------------------------

struct watch_info {
  std::string name;
  std::string uri;
  std::string shape;
  std::uint64_t events = 0;
  std::uint64_t notices = 0;
  std::uint64_t filter_errors = 0;
  std::string state;  // running, failed, restore_failed
  bool restore_failed = false;
  std::string error;  // why it failed, if it did
};

struct watch_start_reply {
  std::optional<watch_error> error;
  std::string shape;
  bool replaced = false;
};

struct watch_start_request {
  persistence::watch_spec spec;
  std::size_t max_watches = 0;  // the tenant's limit; 0: the node's
  // Moved here from another cluster member: validated when it was first
  // started (no dry run, no watch cap), resuming from `progress` if given.
  bool adopt = false;
  std::optional<persistence::watch_progress> progress;
  std::function<void(watch_start_reply)> reply;
};
using watch_start_request_ptr = std::shared_ptr<watch_start_request>;

// Every spec this node holds (running, failed, or moving to another member)
// with its state, for the copies the cluster's other members keep.
struct watch_spec_state {
  persistence::watch_spec spec;
  std::string state;
};
// `restored`: the specs stored here have all been started (or listed as
// failed) since the node started, so the list is complete; until then a
// stored watch may still appear in it.
struct watch_specs_request {
  std::function<void(std::vector<watch_spec_state>, bool restored)> reply;
};
using watch_specs_request_ptr = std::shared_ptr<watch_specs_request>;

// Stops a watch to move it to another member: its pending notices go out
// with the position they leave, then its spec and position are read. The
// spec stays stored here ("moving") until a stop forgets it.
struct watch_release_request {
  persistence::watch_id id;
  std::function<void(std::optional<watch_error>, std::optional<persistence::watch_spec>,
                     std::optional<persistence::watch_progress>)>
      reply;
};
using watch_release_request_ptr = std::shared_ptr<watch_release_request>;

struct watch_list_request {
  std::string tenant;
  std::function<void(std::vector<watch_info>)> reply;
};
using watch_list_request_ptr = std::shared_ptr<watch_list_request>;

// What a node's restore leaves alone: the watches another cluster member
// runs now (-> that member). Their specs here are dropped; the member
// running one hands it back, with its position, when placement puts it
// here (a stale copy started here would fight it for its notice stream).
struct watch_restore_plan {
  std::map<persistence::watch_id, std::string> running_elsewhere;
};
using watch_restore_plan_ptr = std::shared_ptr<const watch_restore_plan>;

struct watch_stop_request {
  persistence::watch_id id;
  // Another cluster member runs this watch too and keeps it: this copy
  // ends without waiting on its notice stream (that member may hold it),
  // and its pending notices are dropped (the kept copy notices from its
  // own position).
  bool duplicate = false;
  std::function<void(std::optional<watch_error>, bool stopped)> reply;
};
using watch_stop_request_ptr = std::shared_ptr<watch_stop_request>;

}  // namespace tidings::actors
