#pragma once

// A follower's copy of one stream's log (replication, ADR 0017): it applies
// what the owner's log shipper sends, in order, to this node's store under
// the same epoch, and answers each append once it is durable. The replica
// host (replica_host.hpp) spawns one per stream it follows and routes
// appends to it.
//
// An append is taken only from the member this node sees as the stream's
// owner, and only in that member's term or a newer one (an older term is
// FENCED: a stale owner cannot write here). A copy is "in sync" once the
// owner says it holds the whole log (a live write, or the last catch-up
// step); only an in-sync copy whose owner was lost is taken over as is
// (node_handoff.cpp). A node restart forgets that: a copy found in the store
// is not in sync until its owner says so again.
//
//   following ──stop (this node takes the stream over, or hands it out)──> stopped
//   following ──release (no longer a follower)──> copy dropped, actor ends

#include <caf/all.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "actors/stream_key.hpp"
#include "cluster/atoms.hpp"
#include "cluster/replica_append.hpp"
#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"

namespace tidings::cluster {

class cluster_view;

using replica_actor = caf::typed_actor<
    // An append from the owner's shipper; answers a ReplicaReply (which
    // goes back to the shipper as it is).
    caf::replies_to<replicate_atom, replica_append_ptr>::with<std::string>,
    // Stop following; answers, once nothing is being written, whether the
    // copy is in sync, whose copy it is, its epoch and head (0, 0: none).
    caf::replies_to<stop_atom>::with<bool, std::string, std::uint64_t, std::uint64_t>,
    // Drop the copy (it is no longer a follower's); answers once that is
    // durable, then ends.
    caf::replies_to<release_atom>::with<std::string>,
    // A write of ours is durable (token, error text if it failed).
    caf::reacts_to<written_atom, std::uint64_t, std::string>>;

struct replica_config {
  actors::stream_key stream;
  std::string self_id;
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  cluster_view* view = nullptr;
};

struct replica_state {
  static inline const char* name = "replica";

  // An append whose write is in flight, answered once it is durable.
  struct in_flight {
    std::uint64_t token = 0;
    std::optional<caf::typed_response_promise<std::string>> reply;  // none: an internal write
    std::string answer;                                             // the ReplicaReply to send
    bool synced = false;                                            // in sync once it is durable
  };

  replica_config cfg;
  std::optional<persistence::stream_meta> meta;  // with writes in flight
  // Trimmed events below this are deleted from the store (0: unknown);
  // deletes go in chunks (core::physical_trim_due).
  std::uint64_t deleted_below = 0;
  bool in_sync = false;
  bool stopped = false;
  bool failed = false;
  std::uint64_t next_token = 1;
  std::deque<in_flight> writing;
  std::vector<caf::typed_response_promise<bool, std::string, std::uint64_t, std::uint64_t>> stop_waiters;
  std::vector<caf::typed_response_promise<std::string>> release_waiters;
};

replica_actor::behavior_type replica(replica_actor::stateful_pointer<replica_state> self, replica_config cfg);

}  // namespace tidings::cluster
