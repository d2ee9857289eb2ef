#pragma once

// The followers' copies this node keeps of other members' logs
// (replication, ADR 0017): it routes each owner's append to the replica
// actor of that stream, spawning one on first use, and stops, drops or
// forgets copies when this node takes a stream over, hands one out, no
// longer follows it, or its membership lapses. The node actor decodes what
// peers send (ReplicaAppend, ReplicaRelease) and checks the append is for
// this life of the member; this actor decides the rest.
//
//   no copy ──append──> following ──stop──> stopped (the store keeps it)
//                       following ──release / drop──> deleting ──durable──> no copy
//                       following ──forget (lapsed)──> forgetting ──stopped──> no copy running

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/hub_registry.hpp"
#include "actors/stream_key.hpp"
#include "cluster/atoms.hpp"
#include "cluster/replica_actor.hpp"
#include "cluster/replica_append.hpp"
#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"

namespace tidings::cluster {

class cluster_view;

// This node's copy of a stream's log, as its follower left it.
struct copy_status {
  bool exists = false;
  bool in_sync = false;  // a follower's copy its owner said was whole
  std::string owner;     // whose log: this node's own id, or the owner it followed
  std::uint64_t epoch = 0;
  std::uint64_t head = 0;
};

using replica_host_actor = caf::typed_actor<
    // An owner's append, for this life of the member; answers a
    // ReplicaReply (refused here, or the replica's).
    caf::replies_to<replicate_atom, replica_append_ptr>::with<std::string>,
    // The owner no longer counts this node as a follower: the copy is
    // dropped; answers once that is durable (or nothing was there).
    caf::replies_to<release_atom, std::string, std::string>::with<bool>,
    // Stop following (this node takes the stream over or hands it out);
    // answers what the copy is once nothing is being written to it (nor
    // deleted: a copy being dropped is answered once it is gone).
    caf::replies_to<stop_atom, std::string, std::string>::with<copy_status>,
    // Delete this node's copy of a stream at this epoch unless a follower
    // runs for it (the new owner has it durable, or this node no longer
    // follows it); appends are refused until it is gone.
    caf::reacts_to<drop_atom, std::string, std::string, std::uint64_t>,
    // This node's membership lapsed: writes may be acknowledged without it
    // now, so every follower stops and no copy counts as in sync.
    caf::reacts_to<forget_atom>,
    // A dropped copy is gone (internal, from the committer's thread).
    caf::reacts_to<deleted_atom, std::string, std::string>>;

struct replica_host_config {
  std::string self_id;
  actors::hub_registry* hubs = nullptr;
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  cluster_view* view = nullptr;
  std::chrono::milliseconds request_timeout{5000};
};

struct replica_host_state {
  static inline const char* name = "cluster-replica-host";
  // Not an aggregate: CAF 0.17 would construct one from its actor pointer.
  replica_host_state() = default;

  replica_host_config cfg;
  std::map<actors::stream_key, replica_actor> replicas;    // followers running
  std::set<actors::stream_key> deleting;                   // copies being dropped
  std::map<actors::stream_key, replica_actor> forgetting;  // followers being stopped (lapsed)
  // Stops asked while the copy was being dropped: answered once it is gone.
  std::map<actors::stream_key, std::vector<caf::typed_response_promise<copy_status>>> after_delete;
};

replica_host_actor::behavior_type replica_host(replica_host_actor::stateful_pointer<replica_host_state> self,
                                               replica_host_config cfg);

// Whether a stored copy is a follower's (another member's log).
bool is_follower_copy(const persistence::stream_meta& meta, const std::string& self_id);

// What this node's store holds of `key`, with no follower vouching for it
// (so never in sync).
copy_status stored_copy(persistence::store& store, const actors::stream_key& key, const std::string& self_id);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::copy_status)
