#pragma once

// The membership as the rest of the node reads it: a snapshot the node
// actor replaces on every change, read without blocking by I/O threads,
// hubs and the registry. It is also the hub registry's router: placement of
// a stream is computed here from the snapshot's live members.

#include <caf/all.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "actors/hub_registry.hpp"
#include "actors/hub_router.hpp"
#include "actors/source_registry_actor.hpp"
#include "cluster/member_table.hpp"
#include "cluster/record_keeper.hpp"

namespace tidings::cluster {

struct membership {
  std::string self_id;
  std::vector<std::string> live;                     // sorted: placement runs over these (up, not draining)
  std::vector<std::string> holders;                  // sorted, self included: up, draining or not
  std::vector<std::string> lost;                     // seen and lost since this node started
  std::vector<std::pair<member, caf::actor>> peers;  // up members' node actors

  // The node actor of the up member `id`; null when it is not one.
  caf::actor node_of(const std::string& id) const {
    for (const auto& [peer, handle] : peers)
      if (peer.id == id) return handle;
    return {};
  }
  // Its incarnation as the record lists it; 0 when it is not such a member.
  std::int64_t incarnation_of(const std::string& id) const {
    for (const auto& [peer, handle] : peers)
      if (peer.id == id) return peer.incarnation;
    return 0;
  }
};
using membership_ptr = std::shared_ptr<const membership>;

// What this node knows of one stream's replication (ADR 0017), for the
// admin views: as its owner (its followers) or as a follower (its copy).
struct replication_info {
  std::string role;  // "owner" or "follower"
  std::uint64_t term = 0;
  std::string owner;  // follower: whose log the copy is
  std::uint64_t head = 0;
  std::uint64_t acknowledged = 0;  // owner: held by the write quorum
  bool in_sync = false;            // follower: the copy holds the whole log
  struct follower_row {
    std::string node;
    std::string state;  // probing, catching_up, in_sync, releasing
    std::uint64_t confirmed = 0;
  };
  std::vector<follower_row> followers;
  // Owner: the stream's agreed record as it last read or wrote it (ADR 0021).
  std::string leader;
  std::uint64_t leader_epoch = 0;
  std::vector<std::string> isr;
  caf::actor_addr by;  // the shipper or copy that wrote this row
};

struct replication_settings {
  std::size_t factor = 2;                        // copies of each log, the owner's included
  std::optional<std::size_t> write_quorum;       // followers per write; nullopt: all in sync
  std::size_t min_insync = 1;                    // copies in sync for a write to be acknowledged
  std::chrono::milliseconds replica_lag{10000};  // behind this long: out of the ISR
};

// A subscription this node's sessions and watches hold to a source that
// runs on another member (their leases share it). When that member is lost
// or drains, follow_sources() subscribes again where the source's stream
// is placed now, this node included; the lease at the old member goes.
struct source_hold {
  std::string tenant;
  std::string uri;
  std::string stream;
  std::mutex mutex;    // guards the rest
  std::string holder;  // the member the source runs on; "" once it runs here
  caf::actor target;   // its node actor
  std::uint64_t lease = 0;
  actors::source_lease_ptr local;  // the lease here, once it runs here
  bool moving = false;
  // Its holder returned the source to the stream's owner (its lease there
  // is void): it follows, with the pauses below, until it has moved,
  // wherever the stream is owned by then.
  bool returned = false;
  // A failed follow is tried again after a growing pause; one the new
  // owner refuses for good (its upstreams do not serve the URI) is not.
  std::chrono::steady_clock::time_point next_try{};
  std::chrono::milliseconds backoff{0};
  bool gave_up = false;

  ~source_hold();
};

// Every hold still referenced, shared with the replies that add to it (they
// may come after the view is gone).
struct source_hold_list {
  std::mutex mutex;
  std::vector<std::weak_ptr<source_hold>> holds;

  void add(const std::shared_ptr<source_hold>& hold);
  // The live ones; the expired ones are dropped.
  std::vector<std::shared_ptr<source_hold>> live();
};

// The owner owner_of() names when no member is known: no node has that id,
// so a relay to it has no connection and waits, and a publish gets 503.
inline constexpr const char* no_member = "(no member)";

class cluster_view final : public actors::hub_router {
 public:
  cluster_view(caf::actor_system& system, std::string self_id, actors::hub_registry& hubs,
               std::size_t ring_events);

  membership_ptr current() const;
  void update(membership_ptr m);

  // The member that owns (tenant, key), "" for this node: the live member
  // that pins it (a source or watch there writes it), else placement's;
  // no_member while no member is known.
  std::string owner_of(const std::string& tenant, const std::string& key) const;
  // What `holder` pins now (its Pins message); true when that changed.
  bool set_pins(const std::string& holder, std::set<actors::stream_key> keys);

  std::string owner(const actors::stream_key& key) override;
  std::string self_id() override { return current()->self_id; }
  bool taken_over(const actors::stream_key& key) override;
  actors::stream_actor spawn_relay(const actors::stream_key& key, const std::string& owner) override;
  void pull(const actors::stream_key& key, actors::hub_handoff_actor hub) override;
  bool subscribe_elsewhere(const std::string& tenant, const std::string& stream,
                           const actors::source_subscribe_request_ptr& req) override;
  actors::source_lease_ptr hold_here(const std::string& tenant, const std::string& uri,
                                     const std::string& stream, actors::source_lease_ptr lease) override;
  std::optional<actors::stream_tail> read_tail(const actors::stream_key& key, std::size_t max,
                                               std::chrono::milliseconds timeout) override;

  // Set once the node actor runs: pulls go to it.
  void set_node(caf::actor node);
  // Where a source runs when this node becomes its owner.
  void set_sources(actors::source_registry_actor sources);
  // Subscribes again every hold whose member is gone or draining, or has
  // returned the source to its placement owner (a membership change, a
  // member's returns, and every tick to retry).
  // A membership change also retries holds that gave up (the new owner
  // may serve what the old one refused).
  void follow_sources(bool membership_changed);
  std::size_t source_holds() const;
  // The source streams `holder` ("" for this node) returned to their
  // placement owners lately; true when that changed.
  bool set_returned(const std::string& holder, std::set<actors::stream_key> keys);
  // Who held `key` before this node if not this node: the top of the
  // holders without us ("" when there is nobody else).
  std::string previous_holder(const std::string& tenant, const std::string& key) const;

  // Replication (ADR 0017). The store is where shippers read catch-ups
  // from (both set before the first hub).
  void set_store(persistence::store* store) { store_ = store; }
  void set_replication_settings(replication_settings s);
  // The keeper of the replicated streams' records in etcd (ADR 0021), set
  // before the first hub; none: owners go by their followers alone.
  void set_records(record_keeper_actor records);
  std::optional<record_keeper_actor> records() const;
  // Whether `key`'s log is replicated and so led by a record: the streams
  // the hub registry gives a replicator (every readable name, watch: and src: too), with the
  // keeper set and a replication factor of 2 or more.
  bool has_record(const actors::stream_key& key) const override;
  replication_settings replication() const;
  std::optional<actors::replicator_actor> spawn_replicator(const actors::stream_key& key,
                                                           actors::replication_sink_actor hub) override;
  void fenced(const actors::stream_key& key, const std::string& member) override;
  // The member a fenced hub's successor pulls from (once), "" if none.
  std::string take_fence_hint(const actors::stream_key& key);
  void set_replication(const actors::stream_key& key, replication_info info);
  // Only the row `by` wrote (a newer shipper or copy may have replaced it).
  void erase_replication(const actors::stream_key& key, const caf::actor_addr& by);
  std::map<actors::stream_key, replication_info> replication_rows() const;

 private:
  caf::actor_system& system_;
  actors::hub_registry& hubs_;
  std::size_t ring_events_;
  mutable std::mutex mutex_;
  membership_ptr current_;
  caf::actor node_;
  actors::source_registry_actor sources_;
  std::shared_ptr<source_hold_list> holds_ = std::make_shared<source_hold_list>();
  // Other members' pinned streams, and who pinned a stream last (its log
  // is there when it moves on).
  std::map<std::string, std::set<actors::stream_key>> pins_;
  std::map<actors::stream_key, std::string> pinned_by_;
  struct unpinned {
    std::string holder;
    std::chrono::steady_clock::time_point at;
  };
  std::map<actors::stream_key, unpinned> last_pinned_by_;
  std::map<std::string, std::set<actors::stream_key>> returned_;  // by holder, "" for this node

  void resubscribe(const std::shared_ptr<source_hold>& hold, const std::string& owner);

  persistence::store* store_ = nullptr;
  replication_settings replication_;
  std::optional<record_keeper_actor> records_;
  std::vector<caf::actor_addr> shippers_;  // told of every membership change
  std::map<actors::stream_key, std::string> fence_hints_;
  std::map<actors::stream_key, replication_info> replication_rows_;
};

}  // namespace tidings::cluster
