#pragma once

// Typed interface of a source actor (DESIGN.md "Actors": source), one per
// canonical source key, spawned and stopped by the source registry
// (actors/source_registry_actor.hpp). Its upstream lives on the sources
// thread (sources/upstream.hpp); the actor posts calls there and the
// upstream's callbacks come back as tasks.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/all.hpp>

#include "actors/source_registry_actor.hpp"
#include "actors/watch_actors.hpp"

namespace tidings::sources {

using join_atom = caf::atom_constant<caf::atom("join")>;
using close_atom = caf::atom_constant<caf::atom("close")>;

// A subscriber waiting for the source's first read. The reply carries an
// error, or nothing when the source is running. A join that is never
// answered (sent to a source that had just ended, so CAF dropped it) answers
// `unavailable` when it is destroyed: no subscriber waits forever.
struct source_join {
  using reply_fn = std::function<void(std::optional<actors::watch_error>, std::string shape)>;
  explicit source_join(reply_fn fn) : reply_(std::move(fn)) {}
  ~source_join() {
    if (reply_)
      reply_(actors::watch_error{actors::watch_error_kind::unavailable, "the source ended; retry"}, {});
  }
  source_join(const source_join&) = delete;
  source_join& operator=(const source_join&) = delete;

  void answer(std::optional<actors::watch_error> error, std::string shape) {
    auto fn = std::move(reply_);
    reply_ = nullptr;
    if (fn) fn(std::move(error), std::move(shape));
  }

 private:
  reply_fn reply_;
};
using source_join_ptr = std::shared_ptr<source_join>;

using source_actor = caf::typed_actor<
    // Answer once the first read is done (at once when it is).
    caf::reacts_to<join_atom, source_join_ptr>,
    // A callback from the sources thread, or a backoff timer.
    caf::reacts_to<actors::task_atom, actors::actor_task>,
    // The last subscriber left, or the node stops: close the upstream, quit.
    caf::reacts_to<close_atom>>;

}  // namespace tidings::sources

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::sources::source_join_ptr)
