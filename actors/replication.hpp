#pragma once

// What a hub tells its stream's log shipper when the cluster replicates
// logs (ADR 0017), and the shipper's typed interface. The shipper itself is
// cluster/'s (it knows the members); a hub only sees this interface, so a
// single node and replication factor 1 run the same hub without one.
//
// A hub ships every write of its log as it submits it to its own store, and
// acknowledges a publish once the write is durable here and the shipper
// reports the write quorum holds it (replicated_atom). Nothing is delivered
// before that, so a follower that takes over holds every event a client saw.

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "persistence/store.hpp"

namespace tidings::actors {

// One write of the owner's log, as its followers apply it.
struct replica_batch {
  std::uint64_t prev_seq = 0;  // the log's head before these events
  std::vector<persistence::stored_event> events;
  std::vector<std::pair<std::string, persistence::idempotency_record>> idempotency;
  // The log's meta after this write: epoch, first_seq (retention), head,
  // term. Its id is this node's.
  persistence::stream_meta meta;
};
using replica_batch_ptr = std::shared_ptr<const replica_batch>;

// Where the owner's log came from when its term began (the base of its
// term): followers with a copy of that term and writer keep it up to head.
struct replica_base {
  std::uint64_t term = 0;
  std::string owner;  // "": this node
  std::uint64_t head = 0;
};

// hub -> shipper
using ship_atom = caf::atom_constant<caf::atom("rship")>;
using local_atom = caf::atom_constant<caf::atom("rlocal")>;
using begin_atom = caf::atom_constant<caf::atom("rbegin")>;
// A fetch came for a cursor past the head: have every follower answer in
// this term again before the hub calls that cursor bogus.
using reconfirm_atom = caf::atom_constant<caf::atom("rrecheck")>;
// shipper -> hub
using replicated_atom = caf::atom_constant<caf::atom("rrepl")>;
using fenced_atom = caf::atom_constant<caf::atom("rfenced")>;
using writable_atom = caf::atom_constant<caf::atom("rwritable")>;
using term_atom = caf::atom_constant<caf::atom("rterm")>;
using confirmed_atom = caf::atom_constant<caf::atom("rconfirm")>;
// peer -> hub (through the node): a member holds this stream's log of `term`
using check_term_atom = caf::atom_constant<caf::atom("rcheck")>;

struct replica_start {
  persistence::stream_meta meta;  // the log as the term begins (term set)
  replica_base base;
};
using replica_start_ptr = std::shared_ptr<const replica_start>;

using replicator_actor = caf::typed_actor<
    // The hub's term begins with this log: probe the followers, catch them up.
    caf::reacts_to<begin_atom, replica_start_ptr>,
    // A write the hub just submitted to its own store.
    caf::reacts_to<ship_atom, replica_batch_ptr>,
    // The hub's own store holds the log durably up to this seq.
    caf::reacts_to<local_atom, std::uint64_t>,
    // Probe the followers again and report `confirmed` afresh.
    caf::reacts_to<reconfirm_atom>>;

}  // namespace tidings::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::replica_batch_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::replica_start_ptr)
