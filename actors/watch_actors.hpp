#pragma once

// Typed interfaces of a watch's actors (DESIGN.md "Actors"):
//
//   hub of the watched stream ──feed──> watch_filter ──lines──> watch_debounce
//                                        (Lua, own thread)      (dedupe, timer)
//                                                                     │
//                                   hub of watch:<name> <──publish────┘
//
// and of the watch_manager that starts, lists, stops and restores them.

#include <functional>

#include <caf/all.hpp>

#include "actors/watch_types.hpp"

namespace tidings::actors {

using prepare_atom = caf::atom_constant<caf::atom("prepare")>;
using go_atom = caf::atom_constant<caf::atom("go")>;
using feed_atom = caf::atom_constant<caf::atom("feed")>;
using fetched_atom = caf::atom_constant<caf::atom("fetched")>;
using overflow_atom = caf::atom_constant<caf::atom("overflow")>;
using lines_atom = caf::atom_constant<caf::atom("lines")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using published_atom = caf::atom_constant<caf::atom("published")>;
using saved_atom = caf::atom_constant<caf::atom("saved")>;
using resend_atom = caf::atom_constant<caf::atom("resend")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using abandon_atom = caf::atom_constant<caf::atom("abandon")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;
using specs_atom = caf::atom_constant<caf::atom("specs")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using task_atom = caf::atom_constant<caf::atom("task")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;

using fetch_reply_ptr = std::shared_ptr<const fetch_reply>;

// A continuation to run inside the receiving actor (the end of an async step).
struct actor_task {
  std::function<void()> run;
};

// A task that, wherever it runs (another actor's callback, another
// thread), continues with `fn` inside `target`, which runs what it gets as
// (task_atom, actor_task). `fn` may use the target's state freely.
template <class Handle>
actor_task continue_in(Handle target, std::function<void()> fn) {
  return actor_task{[target = std::move(target), fn = std::move(fn)] {
    caf::anon_send(target, task_atom::value, actor_task{fn});
  }};
}

using watch_filter_actor = caf::typed_actor<
    // Build the baseline (or load the restored position), compile and
    // dry-run the filter; the reply says whether the watch can start.
    caf::reacts_to<prepare_atom, watch_prepare_request_ptr>,
    // Subscribe to the stream from the prepared position.
    caf::reacts_to<go_atom>,
    // A committed batch from the hub (feed generation, batch).
    caf::reacts_to<feed_atom, std::uint64_t, frame_batch_ptr>,
    // A catch-up page or the end of catching up (feed generation, reply).
    caf::reacts_to<fetched_atom, std::uint64_t, fetch_reply_ptr>,
    // Too many deliveries queued: switch to page-by-page catch-up.
    caf::reacts_to<overflow_atom, std::uint64_t>>;

using watch_debounce_actor = caf::typed_actor<
    // Lines from the filter and the position they leave the watch at.
    caf::reacts_to<lines_atom, watch_output_ptr>,
    // The debounce timer (generation).
    caf::reacts_to<tick_atom, std::uint64_t>,
    // A notice was committed, or failed (publish id, whether it may be sent
    // again, whether it may be stored all the same, error or empty).
    caf::reacts_to<published_atom, std::uint64_t, bool, bool, std::string>,
    // Send the oldest unstored notice again (publish id).
    caf::reacts_to<resend_atom, std::uint64_t>,
    // A position without a notice was written, or failed (error or empty).
    caf::reacts_to<saved_atom, std::string>,
    // Publish whatever is pending (or, when false, drop it: a successor
    // redoes it from the stored position), wait for what is in flight, then
    // quit and run the task.
    caf::reacts_to<flush_atom, bool, actor_task>,
    // Another cluster member runs this watch and notices from its own
    // position: drop what is pending and what waits at once (a try the hub
    // holds may still be stored), then quit and run the task.
    caf::reacts_to<abandon_atom, actor_task>>;

using watch_manager_actor = caf::typed_actor<
    // POST /v1/watches
    caf::reacts_to<start_atom, watch_start_request_ptr>,
    // GET /v1/watches
    caf::reacts_to<list_atom, watch_list_request_ptr>,
    // DELETE /v1/watches/{name}
    caf::reacts_to<stop_atom, watch_stop_request_ptr>,
    // At node start: restart every stored spec the plan does not leave
    // alone, then one restore notice.
    caf::reacts_to<restore_atom, watch_restore_plan_ptr>,
    // Cluster: the specs held here, and a watch handed to another member.
    caf::reacts_to<specs_atom, watch_specs_request_ptr>,
    caf::reacts_to<release_atom, watch_release_request_ptr>,
    // The next step of a start or stop.
    caf::reacts_to<task_atom, actor_task>,
    // The node stops: end every watch's actors (no flush; the stored
    // positions let a restart redo what was pending), then quit.
    caf::reacts_to<shutdown_atom>>;

}  // namespace tidings::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::frame_batch_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::fetch_reply_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::actor_task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_prepare_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_output_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_start_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_list_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_stop_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_specs_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_release_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::watch_restore_plan_ptr)
