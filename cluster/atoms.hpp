#pragma once

// Messages between nodes: atoms, strings holding proto/cluster.proto
// messages, and actor handles; nothing else crosses the middleman.

#include <caf/all.hpp>

namespace tidings::cluster {

// node <-> node
// Joining goes through the peer gate (cluster/peer_gate.hpp, ADR 0024):
// (nonce) -> PeerHello, then (actor, PeerJoin) -> (actor, Members). The
// gate hands a proven join on to its node actor as (actor, Member).
using hello_atom = caf::atom_constant<caf::atom("chello")>;
using join_atom = caf::atom_constant<caf::atom("cjoin")>;
// (node id, incarnation): the sender drains. The record says so too, but a
// peer must know before the drain's own messages (moved watches) arrive.
using draining_atom = caf::atom_constant<caf::atom("cdraining")>;
using publish_atom = caf::atom_constant<caf::atom("cpublish")>;    // (PublishRequest) -> PublishReply
using fetch_atom = caf::atom_constant<caf::atom("cfetch")>;        // (FetchRequest) -> FeedPage
using open_atom = caf::atom_constant<caf::atom("cfeedopen")>;      // (actor relay, node id, FetchRequest)
using close_atom = caf::atom_constant<caf::atom("cfeedclose")>;    // (actor relay, tenant, stream)
using stats_atom = caf::atom_constant<caf::atom("cstats")>;        // () -> NodeStats
using take_atom = caf::atom_constant<caf::atom("ctake")>;          // (TakeRequest) -> TakeReply
using taken_atom = caf::atom_constant<caf::atom("ctaken")>;        // (tenant, stream, epoch): drop your copy
using adopt_atom = caf::atom_constant<caf::atom("cadopt")>;        // (tenant, stream, term): pull it from me
using read_atom = caf::atom_constant<caf::atom("cread")>;          // (ReadRequest) -> TakeReply
using srcsub_atom = caf::atom_constant<caf::atom("csrcsub")>;      // (SourceSubRequest) -> SourceSubReply
using srcunsub_atom = caf::atom_constant<caf::atom("csrcunsub")>;  // (lease id)
using srcdone_atom = caf::atom_constant<caf::atom("csrcdone")>;    // local: a subscription answered
// Watches: the *here forms run on the receiving node only; the others
// (asked by this node's routes) cover the whole cluster.
using wstart_atom = caf::atom_constant<caf::atom("cwstart")>;        // (WatchStart) -> WatchStartReply
using wstart_here_atom = caf::atom_constant<caf::atom("cwstarth")>;  // (WatchStart) -> WatchStartReply
using wlist_atom = caf::atom_constant<caf::atom("cwlist")>;          // (tenant) -> WatchList
using wlist_here_atom = caf::atom_constant<caf::atom("cwlisth")>;    // (tenant) -> WatchList
using wstop_atom = caf::atom_constant<caf::atom("cwstop")>;          // (tenant, name) -> WatchStopReply
using wstop_here_atom = caf::atom_constant<caf::atom("cwstoph")>;    // (tenant, name) -> WatchStopReply
using wcopy_atom = caf::atom_constant<caf::atom("cwcopy")>;  // (WatchCopies): the sender's watch specs
using pins_atom = caf::atom_constant<caf::atom("cpins")>;    // (Pins): the sender's pinned streams
// Replication (ADR 0017): a stream's owner -> its followers' node actors.
using replicate_atom = caf::atom_constant<caf::atom("crepl")>;   // (ReplicaAppend) -> ReplicaReply
using release_atom = caf::atom_constant<caf::atom("crelease")>;  // (ReplicaRelease) -> ""
// owner node -> relay
using page_atom = caf::atom_constant<caf::atom("cpage")>;  // (FeedPage)
// local only
using start_atom = caf::atom_constant<caf::atom("cstart")>;
using tick_atom = caf::atom_constant<caf::atom("ctick")>;
using nodes_atom = caf::atom_constant<caf::atom("cnodes")>;
using done_atom = caf::atom_constant<caf::atom("cdone")>;
using retry_atom = caf::atom_constant<caf::atom("cretry")>;
using pull_atom = caf::atom_constant<caf::atom("cpull")>;
using drain_atom = caf::atom_constant<caf::atom("cdrain")>;
using drain_end_atom = caf::atom_constant<caf::atom("cdrainend")>;
using handover_atom = caf::atom_constant<caf::atom("chandover")>;  // a drain's streams go
using settled_atom = caf::atom_constant<caf::atom("csettled")>;
using rebalance_atom = caf::atom_constant<caf::atom("crebal")>;
using copies_atom = caf::atom_constant<caf::atom("ccopies")>;    // (WatchCopies): this node's own
using force_atom = caf::atom_constant<caf::atom("cforce")>;      // an operator's forced election
using isr_atom = caf::atom_constant<caf::atom("cisr")>;          // a shipper's record change, again
using flush_atom = caf::atom_constant<caf::atom("cflush")>;      // a shipper's queued writes go out
using view_atom = caf::atom_constant<caf::atom("cview")>;        // membership changed (to shippers)
using stop_atom = caf::atom_constant<caf::atom("cstop")>;        // a follower's copy stops following
using written_atom = caf::atom_constant<caf::atom("cwritten")>;  // a follower's write is durable
using deleted_atom = caf::atom_constant<caf::atom("cdeleted")>;  // a dropped copy is gone
using drop_atom = caf::atom_constant<caf::atom("cdrop")>;        // a copy is to be deleted
using forget_atom = caf::atom_constant<caf::atom("cforget")>;    // no copy here is in sync any more
// node -> its inner actors (source host, watch router, watch mover)
using members_atom = caf::atom_constant<caf::atom("cmembers")>;   // membership changed
using member_gone_atom = caf::atom_constant<caf::atom("cgone")>;  // (id): a member is gone
// inner actors -> node
using watches_changed_atom = caf::atom_constant<caf::atom("cwchanged")>;  // this node's watches changed
using stopping_atom = caf::atom_constant<caf::atom("cwstopping")>;  // (tenant, name): stopped everywhere
using pins_due_atom = caf::atom_constant<caf::atom("cpinsdue")>;    // this node's pins may have changed

}  // namespace tidings::cluster
