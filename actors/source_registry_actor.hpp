#pragma once

// Typed interface of the source registry (issue 4): the one place that owns
// upstream subscriptions on a node. A watch or an SSE session names a URI;
// the registry routes it to a configured upstream, starts (or shares) the
// source actor for its canonical key and answers, after the source's first
// read, with the stream the source feeds ("src:<hash>"). The answer carries
// a lease: dropping the last reference unsubscribes, and the source stops
// when its last lease is gone. The implementation lives in sources/.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/watch_actors.hpp"

namespace tidings::actors {

using source_sub_atom = caf::atom_constant<caf::atom("srcsub")>;
using source_unsub_atom = caf::atom_constant<caf::atom("srcunsub")>;
using source_list_atom = caf::atom_constant<caf::atom("srclist")>;
using source_stop_atom = caf::atom_constant<caf::atom("srcstop")>;
using source_reload_atom = caf::atom_constant<caf::atom("srcreload")>;
using source_handoff_atom = caf::atom_constant<caf::atom("srchandoff")>;
using source_return_atom = caf::atom_constant<caf::atom("srcreturn")>;

// One running source, as the list views show it.
struct source_info {
  std::string tenant;
  std::string uri;              // as first subscribed
  std::string key;              // canonical: "<upstream>|<canonical uri>"
  std::string stream;           // src:<hash>
  std::string server;           // the upstream's name
  std::string shape;            // "state", "event-log" or "" before the first read
  std::string strategy;         // upstream::strategy(), "" until the upstream is open
  std::string state;            // starting, running, resubscribing, retrying, failed
  bool tls_unverified = false;  // its upstream's TLS peer is not verified (insecure_skip_verify)
  std::uint64_t subscribers = 0;
  std::uint64_t failures = 0;  // consecutive failed subscriptions
  std::uint64_t reads = 0;
  std::uint64_t events = 0;
  std::int64_t last_fire_ms = 0;     // wall clock of the last change signal; 0: none yet
  std::int64_t next_attempt_ms = 0;  // wall clock of the next subscribe attempt; 0: none due
  std::string error;                 // the last failure
};

struct source_subscribe_request;

// Holding one keeps the source subscribed; the destructor unsubscribes.
class source_lease {
 public:
  using unsubscribe_fn = std::function<void(std::uint64_t)>;
  source_lease(std::uint64_t id, unsubscribe_fn unsubscribe)
      : id_(id), unsubscribe_(std::move(unsubscribe)) {}
  ~source_lease() {
    if (unsubscribe_) unsubscribe_(id_);
  }
  source_lease(const source_lease&) = delete;
  source_lease& operator=(const source_lease&) = delete;
  std::uint64_t id() const { return id_; }

 private:
  std::uint64_t id_;
  unsubscribe_fn unsubscribe_;
};
using source_lease_ptr = std::shared_ptr<source_lease>;

struct source_subscribe_reply {
  std::optional<watch_error> error;
  std::string stream;  // the stream to read
  std::string key;
  std::string shape;
  source_lease_ptr lease;
};

struct source_subscribe_request {
  std::string tenant;
  std::string uri;
  // Placed here (by another member, or by this node following a source):
  // run it here, never elsewhere, once this node's view of placement agrees
  // (until then it is refused with "retry").
  bool here = false;
  // Called once, on the registry's thread.
  std::function<void(source_subscribe_reply)> reply;
};
using source_subscribe_request_ptr = std::shared_ptr<source_subscribe_request>;

struct source_list_request {
  std::string tenant;  // empty: every tenant
  std::function<void(std::vector<source_info>)> reply;
};
using source_list_request_ptr = std::shared_ptr<source_list_request>;

// A reload changed the configured upstreams (by connector name). The
// catalog has already been updated: `retired` are the replaced and removed
// connectors (their identity only), out of routing but still running.
struct source_reload_request {
  std::vector<std::string> removed;  // their sources end with an ERROR event
  std::vector<std::string> changed;  // their sources restart on the new connector, keeping their leases
  std::vector<const void*> retired;
  // Called once, on the registry's thread, when no source of a retired
  // connector runs any more: the caller may stop them then.
  std::function<void()> done;
};
using source_reload_request_ptr = std::shared_ptr<source_reload_request>;

using source_registry_actor = caf::typed_actor<
    // Route the URI, start or share its source, answer after its first read.
    caf::reacts_to<source_sub_atom, source_subscribe_request_ptr>,
    // A lease was dropped (lease id).
    caf::reacts_to<source_unsub_atom, std::uint64_t>,
    // GET /v1/sources
    caf::reacts_to<source_list_atom, source_list_request_ptr>,
    // The next step of a subscribe (from the sources thread or a source).
    caf::reacts_to<task_atom, actor_task>,
    // A reload: end the sources of removed upstreams, restart those of changed ones.
    caf::reacts_to<source_reload_atom, source_reload_request_ptr>,
    // The node drains out of a cluster: close every source (their streams
    // move to their new owners, where subscribers start them again), then
    // run the task once none runs.
    caf::reacts_to<source_handoff_atom, actor_task>,
    // The source writing (tenant, stream) goes to its placement owner, a
    // member that joined (ADR 0016): it closes and its leases are void
    // (their holders follow it there). Answers true once it is down and its
    // stream unpinned, false at once when none runs (one that failed is
    // not returned: its holders must not start it elsewhere).
    caf::replies_to<source_return_atom, std::string, std::string>::with<bool>,
    // The node stops: close every upstream, then quit.
    caf::reacts_to<source_stop_atom>>;

// A lease whose release tells `registry`. It holds the registry weakly: a
// lease released after the registry ended (node shutdown) sends nothing.
inline source_lease_ptr make_source_lease(const source_registry_actor& registry, std::uint64_t id) {
  caf::actor_addr weak = registry.address();
  return std::make_shared<source_lease>(id, [weak](std::uint64_t lease) {
    if (auto strong = caf::actor_cast<source_registry_actor>(weak))
      caf::anon_send(strong, source_unsub_atom::value, lease);
  });
}

}  // namespace tidings::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::source_subscribe_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::source_list_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::source_reload_request_ptr)
