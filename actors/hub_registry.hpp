#pragma once

// Finds or spawns the hub of a stream, or in a cluster the relay of a stream
// another node owns. Thread-safe: I/O threads call it.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "actors/hub.hpp"
#include "actors/hub_router.hpp"

namespace tidings::actors {

struct hub_defaults {
  core::retention_policy retention;
  std::size_t ring_events = 1024;
  std::size_t ring_bytes = 1 << 20;
  // Hubs kept for streams that subscribers wait on but nobody has published
  // to yet. Each costs memory for as long as the node runs, so they are capped.
  std::size_t max_unknown_streams = 10000;
  // A stream's hub with no session, no write and nothing under way for this
  // long is released (0: never); the next request brings it back from the
  // store. Single node only: a cluster's hubs stay (see spawn_locked).
  std::chrono::milliseconds idle_release{300000};
  probe* metrics = nullptr;  // null: not measured
};

class hub_registry {
 public:
  hub_registry(caf::actor_system& sys, persistence::store& store, persistence::group_committer& committer,
               hub_defaults defaults);

  // The stream's hub, spawned on first use (for a publish or a subscriber;
  // the stream itself is created by its first publish). In a cluster, for a
  // stream owned elsewhere, its relay.
  stream_actor get(const stream_key& key);
  // Whether `hub` is the registry's hub of `key` now (a pull or claim made
  // for a hub the registry has since dropped is moot).
  bool is_current(const stream_key& key, const caf::actor_addr& hub) const;
  // get(), and the hub it is when this node owns the stream (null: a relay).
  hub_actor own_hub(const stream_key& key);

  // Set once, before any get(), when the node is part of a cluster.
  void set_router(hub_router* router) { router_.store(router); }
  hub_router* router() const { return router_.load(); }
  // Membership changed: every hub or relay whose owner is no longer right is
  // told `moved` and dropped; the next get() spawns the right one.
  void reroute();
  // The connection to `owner` is new: its relays (which hold the old one,
  // or none) are told `moved` and dropped; the next get() makes them anew.
  void renew_relays(const std::string& owner);
  // Streams this node owns (hubs) and relays, for the admin views.
  std::size_t hub_count() const;
  std::size_t relay_count() const;
  // The local hubs of streams this node owns (a relay node's hubs for
  // streams it relays are not among them).
  std::vector<std::pair<stream_key, hub_actor>> owned_hubs() const;
  // The hub this node had for `key` before the stream moved elsewhere (to
  // wait for its last writes before handing the log over); nullopt if none.
  std::optional<hub_actor> moved_hub(const stream_key& key) const;
  void forget_moved(const stream_key& key);
  // `stale`, the hub of `key`, was fenced by a newer term at `member`
  // (ADR 0017): it is dropped like a moved one, and the next get() spawns a
  // hub that pulls the log from there.
  void replace(const stream_key& key, const hub_actor& stale, const std::string& member);

  // For a subscriber: makes sure the stream's hub exists. A stream that does
  // not exist yet takes one of the node's max_unknown_streams places and one
  // of its tenant's `tenant_limit`, until it is created or the last
  // subscriber waiting on it leaves (release_idle).
  enum class admission { admitted, node_full, tenant_full, store_failed };
  admission admit_subscriber(const stream_key& key, std::size_t tenant_limit);
  // The hub `hub` has nobody waiting on it: a stream that does not exist
  // yet, or one idle for idle_release. It is dropped (if it is still the
  // stream's hub and not pinned) and, for the former, its place is free.
  // False when it was not dropped.
  bool release_idle(const stream_key& key, const caf::actor_addr& hub, bool exists);
  // The tenant's streams on this node (those in the store at start and
  // those created since), for limits.streams.
  std::size_t stream_count(const std::string& tenant) const;
  // Whether a publish to `key` may go on under a tenant limit of `limit`
  // streams: the stream exists, or the tenant has fewer. (Concurrent first
  // publishes to new streams may pass it together.)
  bool may_publish(const stream_key& key, std::size_t limit);

  // The node's hub and watch metrics (null: not measured).
  probe* metrics() const { return defaults_.metrics; }

  // A stream that stays on this node whatever placement says: a watch's
  // notice stream while the watch is here, a source's stream while the
  // source runs here (their writes commit together with this node's watch
  // progress or source snapshot; ADR 0015). Counted: pin and unpin pair.
  bool pinned(const stream_key& key) const;
  void pin(const stream_key& key);
  void unpin(const stream_key& key);
  // Every stream pinned here now (the cluster routes them here).
  std::vector<stream_key> pinned_keys() const;

  // Every hub and relay still running (for shutdown), moved ones included:
  // they linger a minute to forward late requests.
  std::vector<stream_actor> all() const;

 private:
  caf::actor_system& sys_;
  persistence::store& store_;
  persistence::group_committer& committer_;
  hub_defaults defaults_;
  struct entry {
    stream_actor actor;
    std::string owner;  // "": this node's own hub; else the relay's owner
    hub_actor hub;      // `actor` as the hub it is when owner is ""; null for a relay
    // Set while the hub's stream does not exist yet (counted in unknown_);
    // whoever clears it first (creation or a move) uncounts it.
    std::shared_ptr<std::atomic<bool>> unknown;
  };
  // `moving`: the stream is owned elsewhere now, and its log may be handed
  // over from this hub (moved_hub); not for a hub merely released.
  // `notify`: tell the hub `moved` (a released hub moves itself).
  void drop_locked(std::map<stream_key, entry>::iterator it, bool moving = true, bool notify = true);
  hub_actor spawn_locked(const stream_key& key, bool unknown);
  void uncount_locked(const std::string& tenant);
  // The right actor for `key` now (a relay or the hub), under the lock.
  stream_actor get_locked(const stream_key& key);

  // Set while the node starts; read from any thread.
  std::atomic<hub_router*> router_{nullptr};
  mutable std::mutex mutex_;
  std::size_t unknown_ = 0;  // hubs whose stream does not exist yet
  std::map<std::string, std::size_t> unknown_by_tenant_;
  std::map<std::string, std::size_t> streams_by_tenant_;
  std::size_t released_since_trim_ = 0;
  std::map<stream_key, entry> hubs_;
  std::map<stream_key, hub_actor> moved_;
  std::map<stream_key, std::size_t> pins_;
  std::vector<caf::actor_addr> retired_;  // moved hubs and relays, maybe still running
  bool pinned_locked(const stream_key& key) const;
};

}  // namespace tidings::actors
