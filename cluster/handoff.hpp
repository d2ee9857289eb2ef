#pragma once

// Streams change owners with their logs (ADR 0015, 0021). As the new owner,
// a hub of this node asks here for its stream (`pull`): the handoff claims
// it by the stream's record and pulls the log, chunk by chunk, from the
// member that has it, then hands the hub the log to adopt. As a holder, it
// answers other members' takes from this node's store once the moved hub
// has no write in flight, and drops its copy when the new owner says the
// log is durable (`taken`). After a membership change, and when this node
// drains, it asks the owners of what the store still holds to pull it.
//
// The node actor is its wire edge: it decodes what peers send and forwards
// pulls from this node's hubs; the handoff reads membership from the
// cluster view.
//
//   pull ──claim──> lead (adopt this node's copy)
//                   pull from the holder ──chunks──> succeed in the record ──> adopt
//                   hold ──retry──> claim again
//   drain ──(sources and watches gone) handover──> every stream taken, or time up

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "actors/hub_registry.hpp"
#include "actors/stream_key.hpp"
#include "cluster/atoms.hpp"
#include "cluster/replica_host.hpp"
#include "cluster/stored_log.hpp"
#include "persistence/store.hpp"

namespace tidings::cluster {

class cluster_view;

using handoff_actor = caf::typed_actor<
    // A hub of this node takes its stream over: its log comes by the record.
    caf::reacts_to<pull_atom, std::string, std::string, actors::hub_handoff_actor>,
    // A pull's next request to its holder (internal).
    caf::reacts_to<retry_atom, std::uint64_t>,
    // A claim that waited (no leader could be had), asked again (internal).
    caf::reacts_to<retry_atom, std::string, std::string, actors::hub_handoff_actor>,
    // A member taking a stream over asks for a chunk of its log.
    caf::replies_to<take_atom, take_request>::with<log_chunk>,
    // The new owner has the log (of that epoch) durable: this copy goes.
    caf::reacts_to<taken_atom, std::string, std::string, std::uint64_t>,
    // Membership settled: the owners of what this store holds for them are
    // asked to take it (draining: only once the hand-over began).
    caf::reacts_to<rebalance_atom>,
    // This node drains: streams still pinned here are not given away yet
    // (their sources and watches end first; the new owners ask again).
    caf::reacts_to<drain_atom>,
    // Draining, with the sources and watches gone: every stream goes to
    // its new owner; answers how many were not taken in time.
    caf::replies_to<handover_atom>::with<std::uint64_t>,
    // The hand-over's time is up (internal).
    caf::reacts_to<drain_end_atom>>;

struct handoff_config {
  std::string self_id;
  caf::actor node;  // this node's node actor: what peers know this node by
  actors::hub_registry* hubs = nullptr;
  persistence::store* store = nullptr;
  cluster_view* view = nullptr;
  replica_host_actor replicas;
  std::chrono::milliseconds request_timeout{5000};
};

// A pull of a stream's log from its previous holder.
struct pull_job {
  actors::stream_key stream;
  actors::hub_handoff_actor hub;
  caf::actor holder;  // the holder's node actor
  std::string holder_id;
  std::chrono::steady_clock::time_point give_up_at;
  std::shared_ptr<actors::stream_handoff> log;
  actors::stream_handoff_ptr fallback;  // what the hub gets when no log comes
  // Pulled as the stream's record says (ADR 0021): the log becomes this
  // node's only by the record's `succeed`, and with no log the claim is
  // made again later instead of a fallback.
  bool claimed = false;
  std::uint64_t leader_epoch = 0;  // claimed: the record's when the pull began
};

struct handoff_state {
  static inline const char* name = "cluster-handoff";
  // Not an aggregate: CAF 0.17 would construct one from its actor pointer.
  handoff_state() = default;

  handoff_config cfg;
  std::map<std::uint64_t, std::shared_ptr<pull_job>> pulls;  // by token
  std::uint64_t next_token = 1;
  bool draining = false;
  std::set<actors::stream_key> handing;  // handed over, not taken yet
  std::set<actors::stream_key> handed;   // taken during this drain (their deletes may be in flight)
  std::optional<caf::typed_response_promise<std::uint64_t>> handover_reply;
};

using handoff_pointer = handoff_actor::stateful_pointer<handoff_state>;

handoff_actor::behavior_type handoff(handoff_pointer self, handoff_config cfg);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::take_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::log_chunk)
