#pragma once

// Runs the sources other members place on this node (ADR 0016): a source
// runs on the owner of the stream it feeds, so there is one upstream
// subscription per source key in the whole cluster. A requesting member's
// subscription becomes a lease here, kept until that member lets go, is
// lost, or this node drains. The node actor forwards what peers send; this
// actor holds the leases.

#include <caf/all.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "actors/source_registry_actor.hpp"
#include "cluster/atoms.hpp"

namespace tidings::cluster {

using source_subscribe_reply_ptr = std::shared_ptr<actors::source_subscribe_reply>;

using source_host_actor = caf::typed_actor<
    // A member's SourceSubRequest; the SourceSubReply (with a lease id when
    // it worked) comes after the source's first read.
    caf::replies_to<srcsub_atom, std::string>::with<std::string>,
    // The registry's answer to one of those, by token (internal).
    caf::reacts_to<srcdone_atom, std::uint64_t, source_subscribe_reply_ptr>,
    // The requester let go of a lease.
    caf::reacts_to<srcunsub_atom, std::uint64_t>,
    // A member is gone: its leases end.
    caf::reacts_to<member_gone_atom, std::string>,
    // This node drains: every lease ends and new requests are refused (the
    // sources close and run again at their streams' new owners).
    caf::reacts_to<drain_atom>>;

struct source_host_state {
  static inline const char* name = "cluster-source-host";
  // Not an aggregate: CAF 0.17 would construct one from its actor pointer.
  source_host_state() = default;

  actors::source_registry_actor sources;  // null: this node runs no sources
  struct held_lease {
    std::string node;  // the member that asked
    actors::source_lease_ptr lease;
  };
  std::map<std::uint64_t, held_lease> leases;  // by the id the member holds
  struct asking {
    std::string node;
    caf::typed_response_promise<std::string> reply;
  };
  std::map<std::uint64_t, asking> waiting;  // registry answers to come, by token
  std::uint64_t next_id = 1;                // tokens and lease ids alike
  bool draining = false;
};

source_host_actor::behavior_type source_host(source_host_actor::stateful_pointer<source_host_state> self,
                                             actors::source_registry_actor sources);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::source_subscribe_reply_ptr)
