#pragma once

// The owner's side of replication (ADR 0017): one shipper per stream this
// node owns, spawned with its hub. It keeps the stream's followers (the
// next replication_factor - 1 members in rendezvous order) holding the log:
// every write the hub ships goes to the followers that are in sync, and a
// follower that is new or behind is caught up from this node's log in the
// background (from the store, then from the writes still in memory) while
// publishes go on. It tells the hub how far the write quorum holds the log.
//
// Each follower, as this shipper sees it:
//
//   probing ──OK at our head──────────────────────────────> in sync
//      │  └──GAP (its copy ends earlier)──> catching up ──reached us──┘
//      └──REFUSED, timeout──> probing again after a pause
//   in sync ──GAP, REFUSED, timeout──> probing      any ──not a follower any more──> releasing
//   in sync, behind the shipped head for replica_lag ──> probing, out of the ISR
//
// A follower that stops answering stays required (it may hold what was
// shipped) until the record drops it: the shipper drops it itself once it
// has not held the shipped head for `replica_lag` (Kafka's
// replica.lag.time.max.ms), by the record's compare-and-swap at this
// leader's epoch, so a follower cut off from this node alone holds writes
// back no longer than that (ADR 0021).
//
// Writes go to an in-sync follower as the shipper's mailbox is drained of
// them: the ones that arrived while it was busy travel as one append, and
// at most eight appends are out to one follower (ADR 0017, amendment).
//
// A write counts as held once the quorum holds it and some follower has
// answered a message sent after it in this term (`evidence`).
//
// A follower that says FENCED holds a newer term: if that term's writer is
// a live member, the hub is stale and is fenced; if it was a lost member
// (or this node in an earlier life), the term moves past it.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "actors/hub_actor.hpp"
#include "actors/replication.hpp"
#include "cluster/atoms.hpp"
#include "cluster/record_keeper.hpp"
#include "core/replica_quorum.hpp"
#include "core/stream_leadership.hpp"

namespace tidings::cluster {

class cluster_view;

using shipper_actor = actors::replicator_actor::extend<
    // The membership changed: followers may come or go.
    caf::reacts_to<view_atom>,
    // A follower's pause before it is probed again is over (id, generation).
    caf::reacts_to<retry_atom, std::string, std::uint64_t>,
    // A change of the stream's record failed for now: try the next one again.
    caf::reacts_to<isr_atom>,
    // Time to see whether a follower has lagged for replica_lag.
    caf::reacts_to<tick_atom>,
    // The writes shipped since the last flush go to the followers.
    caf::reacts_to<flush_atom>>;

struct shipper_config {
  actors::stream_key stream;
  actors::replication_sink_actor hub;
  persistence::store* store = nullptr;
  cluster_view* view = nullptr;
  std::size_t replication_factor = 2;
  std::optional<std::size_t> write_quorum;  // nullopt: every in-sync follower
  // Copies, this node's included, that must be in sync for a write to be
  // acknowledged (ADR 0021's min-insync); fewer and writes are refused.
  std::size_t min_insync = 1;
  std::chrono::milliseconds request_timeout{5000};
  // How long an ISR member may go without holding the shipped head before
  // this leader drops it from the ISR (with a record only).
  std::chrono::milliseconds replica_lag{10000};
  std::size_t chunk_events = 1000;  // per catch-up append
  // The stream's agreed record (ADR 0021); none: acknowledgements follow
  // the followers' confirmations alone (tests of the shipper without etcd).
  std::optional<record_keeper_actor> records;
};

struct shipper_state {
  static inline const char* name = "log-shipper";

  enum class phase { probing, catching_up, in_sync, releasing };
  struct follower {
    caf::actor node;
    std::int64_t incarnation = 0;  // its life as the record lists it (every append carries it)
    phase at = phase::probing;
    bool busy = false;             // a probe or catch-up append is out
    std::uint64_t generation = 0;  // replies from before a restart are ignored (next_generation)
    // In sync: live appends out (this generation), and the writes shipped
    // meanwhile, sent as one append when an answer comes back.
    unsigned out = 0;
    std::deque<actors::replica_batch_ptr> queued;
    std::uint64_t epoch = 0;  // of its copy, as it last said
    std::uint64_t head = 0;   // its copy's end, as it last said
    bool keys_sent = false;   // this catch-up carried the idempotency keys
    std::chrono::milliseconds pause{0};
    // The last time it was known to hold everything this leader had
    // shipped (when a write went out to it caught up, or when an answer
    // confirmed a message sent then).
    caf::actor_clock::time_point caught_up_at{};
  };

  shipper_config cfg;
  bool begun = false;
  bool fenced = false;
  std::string self_id;
  persistence::stream_meta meta;  // the log after the last shipped write
  actors::replica_base base;
  std::uint64_t shipped = 0;  // head of the last shipped write
  std::uint64_t local = 0;    // durable in this node's store
  // Shipped writes not yet durable here (catch-ups read the rest from the store).
  std::deque<actors::replica_batch_ptr> window;
  std::optional<core::replica_quorum> quorum;
  std::uint64_t reported = 0;
  // Fencing: the highest head this node had shipped when it sent a message
  // that a follower then answered in this term (OK or GAP). A write is
  // acknowledged only once some follower answered after it: a node whose
  // followers all refuse it (they follow a newer owner) acknowledges
  // nothing, whatever its own view says.
  std::uint64_t evidence = 0;
  bool alone = false;    // no follower to be had and no member lost
  bool cut_off = false;  // no follower to be had, but members lost
  std::optional<bool> writable_sent;
  bool soon_sent = false;
  std::string unwritable_sent;
  std::map<std::string, follower> followers;
  // Followers that have not answered in this term yet (the hub waits on
  // them before it believes a cursor past its head is bad).
  std::set<std::string> unconfirmed;
  std::optional<bool> confirmed_sent;
  // The record as this leader last read or wrote it: nothing is
  // acknowledged before it names this node leader, and then only what
  // every member of its ISR holds. One change of it is out at a time.
  std::optional<core::stream_record> record;
  bool record_busy = false;
  bool lag_check_armed = false;
  bool flush_due = false;                        // a flush_atom is in the mailbox, behind the ships before it
  caf::actor_clock::time_point lag_check_due{};  // when the armed check should run
};

shipper_actor::behavior_type log_shipper(shipper_actor::stateful_pointer<shipper_state> self,
                                         shipper_config cfg);

}  // namespace tidings::cluster
