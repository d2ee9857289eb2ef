#pragma once

// Typed interfaces of a stream's actors: what readers and writers see of
// any stream, and what the hub of a stream this node owns adds for the
// cluster and for itself.

#include <caf/all.hpp>

#include "actors/messages.hpp"
#include "actors/replication.hpp"

namespace tidings::actors {

using publish_atom = caf::atom_constant<caf::atom("publish")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
using unsub_atom = caf::atom_constant<caf::atom("unsub")>;
using committed_atom = caf::atom_constant<caf::atom("committed")>;
using trim_atom = caf::atom_constant<caf::atom("trim")>;
using moved_atom = caf::atom_constant<caf::atom("moved")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
using adopted_atom = caf::atom_constant<caf::atom("adopted")>;
using quiesce_atom = caf::atom_constant<caf::atom("quiesce")>;
using stall_atom = caf::atom_constant<caf::atom("stall")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;
using hold_atom = caf::atom_constant<caf::atom("hold")>;

// What every reader and writer of a stream holds, whether this node owns
// the stream (its hub) or relays it from the member that does
// (cluster/relay_actor): sessions, watches, sources and the registry see
// only this.
using stream_actor = caf::typed_actor<
    // Assign seqs, persist through the group committer, reply when durable
    // (a relay forwards it to the owner).
    caf::reacts_to<publish_atom, publish_request_ptr>,
    // Read after a cursor (ring, then store); on catching up, register the sink.
    caf::reacts_to<fetch_atom, fetch_request_ptr>,
    // One subscription of this sink ended.
    caf::reacts_to<unsub_atom, fanout_sink_ptr>,
    // The stream's owner changed (cluster): tell the sinks, hand later
    // publishes and fetches to the registry's new hub or relay, then stop.
    caf::reacts_to<moved_atom>>;

// What the cluster's handoff tells the hub of a stream this node is to
// lead (cluster/node_handoff.cpp).
using hub_handoff_actor = caf::typed_actor<
    // What the stream's previous holder handed over (null: nothing; the
    // hub goes on with its own store). A hub spawned with await_handoff
    // holds publishes and fetches until this arrives.
    caf::reacts_to<adopt_atom, stream_handoff_ptr>,
    // No member can serve this stream's log yet, and why (ADR 0021: no
    // in-sync replica is alive). Until adopt_atom, publishes are refused
    // with this reason; reads wait.
    caf::reacts_to<hold_atom, std::string>,
    // Answers once no write is in flight (a moved hub, before its log is
    // handed over).
    caf::replies_to<quiesce_atom>::with<bool>>;

// What the hub's log shipper (ADR 0017) and the node tell a hub whose log
// is replicated.
using replication_sink_actor = caf::typed_actor<
    // The write quorum holds the log up to this seq.
    caf::reacts_to<replicated_atom, std::uint64_t>,
    // A newer term of this stream was written by `member`: this hub is
    // stale; it answers nothing more and the registry replaces it.
    caf::reacts_to<fenced_atom, std::string>,
    // Whether a publish can be acknowledged now, whether it will be soon
    // (a follower is catching up: publishes wait a while), and why not.
    caf::reacts_to<writable_atom, bool, bool, std::string>,
    // The term moved past one a lost owner had reached.
    caf::reacts_to<term_atom, std::uint64_t>,
    // Every follower has (or not yet) answered in this hub's term without
    // fencing it; until then a cursor past the head may be a newer term's.
    caf::reacts_to<confirmed_atom, bool>,
    // A member holds a log of this stream written in `term` (its own).
    caf::reacts_to<check_term_atom, std::uint64_t, std::string>>;

// The hub: one actor per stream this node owns (DESIGN.md "Actors"). The
// rest of its interface is what it sends itself.
using hub_actor = stream_actor::extend_with<hub_handoff_actor, replication_sink_actor>::extend<
    // The group committer finished write number `token` (error text if it failed).
    caf::reacts_to<committed_atom, std::uint64_t, std::string>,
    // Age retention: drop events older than the stream's max age.
    caf::reacts_to<trim_atom>,
    // The handed-over log is durable here (error text if not).
    caf::reacts_to<adopted_atom, std::string>,
    // Writes that waited too long for their followers: their publishers are
    // told to retry (the writes stay, and complete if confirmed later).
    caf::reacts_to<stall_atom>,
    // Nobody waits on this hub's stream, which does not exist: the registry
    // drops it and frees its place among the unknown streams.
    caf::reacts_to<idle_atom>>;

}  // namespace tidings::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::publish_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::fetch_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::fanout_sink_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::stream_handoff_ptr)
