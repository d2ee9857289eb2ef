#include "actors/hub_registry.hpp"

#include "core/stream_name.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace tidings::actors {
namespace {

// A per-tenant count, 0 for a tenant not in the map.
std::size_t count_of(const std::map<std::string, std::size_t>& counts, const std::string& tenant) {
  auto it = counts.find(tenant);
  return it == counts.end() ? 0 : it->second;
}

}  // namespace

hub_registry::hub_registry(caf::actor_system& sys, persistence::store& store,
                           persistence::group_committer& committer, hub_defaults defaults)
    : sys_(sys), store_(store), committer_(committer), defaults_(defaults) {
  std::vector<persistence::stream_meta> metas;
  if (store_.load_streams(&metas).ok())
    for (const auto& m : metas) ++streams_by_tenant_[m.tenant];
}

bool hub_registry::pinned_locked(const stream_key& key) const {
  return pins_.contains(key);
}

bool hub_registry::pinned(const stream_key& key) const {
  std::lock_guard lock(mutex_);
  return pinned_locked(key);
}

void hub_registry::pin(const stream_key& key) {
  std::lock_guard lock(mutex_);
  ++pins_[key];
  if (auto it = hubs_.find(key); it != hubs_.end() && !it->second.owner.empty()) drop_locked(it);
}

std::vector<stream_key> hub_registry::pinned_keys() const {
  std::lock_guard lock(mutex_);
  std::vector<stream_key> out;
  out.reserve(pins_.size());
  for (const auto& [key, count] : pins_) out.push_back(key);
  return out;
}

void hub_registry::unpin(const stream_key& key) {
  std::lock_guard lock(mutex_);
  auto p = pins_.find(key);
  if (p == pins_.end()) return;
  if (--p->second > 0) return;
  pins_.erase(p);
  auto* r = router();
  if (auto it = hubs_.find(key); r && it != hubs_.end() && it->second.owner != r->owner(key)) drop_locked(it);
}

stream_actor hub_registry::get(const stream_key& key) {
  std::lock_guard lock(mutex_);
  return get_locked(key);
}

bool hub_registry::is_current(const stream_key& key, const caf::actor_addr& hub) const {
  std::lock_guard lock(mutex_);
  auto it = hubs_.find(key);
  return it != hubs_.end() && it->second.hub && it->second.hub.address() == hub;
}

hub_actor hub_registry::own_hub(const stream_key& key) {
  std::lock_guard lock(mutex_);
  get_locked(key);
  return hubs_.at(key).hub;
}

stream_actor hub_registry::get_locked(const stream_key& key) {
  auto owner = router() && !pinned_locked(key) ? router()->owner(key) : std::string{};
  auto it = hubs_.find(key);
  if (it != hubs_.end()) {
    if (it->second.owner == owner) return it->second.actor;
    // Moved since the last reroute() (which is on its way): same as it does.
    drop_locked(it);
  }
  if (!owner.empty()) {
    auto relay = router()->spawn_relay(key, owner);
    hubs_.emplace(key, entry{relay, owner, {}, nullptr});
    return relay;
  }
  return spawn_locked(key, false);
}

hub_registry::admission hub_registry::admit_subscriber(const stream_key& key, std::size_t tenant_limit) {
  std::lock_guard lock(mutex_);
  if (hubs_.contains(key)) return admission::admitted;
  if (auto* r = router(); r && !pinned_locked(key) && !r->owner(key).empty()) {
    get_locked(key);  // a relay: the owner decides what the stream is
    return admission::admitted;
  }
  std::optional<persistence::stream_meta> meta;
  if (auto s = store_.get_stream(key.tenant, key.name, &meta); !s.ok()) return admission::store_failed;
  if (!meta) {
    if (unknown_ >= defaults_.max_unknown_streams) return admission::node_full;
    if (count_of(unknown_by_tenant_, key.tenant) >= tenant_limit) return admission::tenant_full;
  }
  spawn_locked(key, !meta);
  return admission::admitted;
}

bool hub_registry::release_idle(const stream_key& key, const caf::actor_addr& hub, bool exists) {
  std::lock_guard lock(mutex_);
  auto it = hubs_.find(key);
  if (it == hubs_.end() || it->second.actor.address() != hub || !it->second.owner.empty() ||
      pinned_locked(key))
    return false;
  drop_locked(it, false, false);  // the hub moves itself (release_if_idle)
  if (defaults_.metrics) defaults_.metrics->stream_released(exists);
  // glibc keeps freed memory in its arenas; after many hubs went, hand the
  // free pages back (measured: a third of what 20 000 hubs took).
  if (++released_since_trim_ >= 1024) {
    released_since_trim_ = 0;
#ifdef __GLIBC__
    ::malloc_trim(0);
#endif
  }
  return true;
}

std::size_t hub_registry::stream_count(const std::string& tenant) const {
  std::lock_guard lock(mutex_);
  return count_of(streams_by_tenant_, tenant);
}

bool hub_registry::may_publish(const stream_key& key, std::size_t limit) {
  if (stream_count(key.tenant) < limit) return true;
  // At the limit: only streams that exist take writes (a point read, paid
  // only by a tenant at its limit).
  std::optional<persistence::stream_meta> meta;
  return store_.get_stream(key.tenant, key.name, &meta).ok() && meta;
}

void hub_registry::uncount_locked(const std::string& tenant) {
  --unknown_;
  if (auto it = unknown_by_tenant_.find(tenant); it != unknown_by_tenant_.end() && --it->second == 0)
    unknown_by_tenant_.erase(it);
}

void hub_registry::reroute() {
  auto* r = router();
  if (!r) return;
  std::lock_guard lock(mutex_);
  for (auto it = hubs_.begin(); it != hubs_.end();) {
    auto owner = pinned_locked(it->first) ? std::string{} : r->owner(it->first);
    if (owner == it->second.owner) {
      ++it;
      continue;
    }
    drop_locked(it++);
  }
}

void hub_registry::renew_relays(const std::string& owner) {
  if (owner.empty()) return;
  std::lock_guard lock(mutex_);
  for (auto it = hubs_.begin(); it != hubs_.end();) {
    if (it->second.owner == owner)
      drop_locked(it++);
    else
      ++it;
  }
}

void hub_registry::drop_locked(std::map<stream_key, entry>::iterator it, bool moving, bool notify) {
  if (notify) caf::anon_send(it->second.actor, moved_atom::value);
  if (retired_.size() >= 1024)
    std::erase_if(retired_, [](const caf::actor_addr& a) { return !caf::actor_cast<caf::actor>(a); });
  retired_.push_back(it->second.actor.address());
  if (it->second.hub && moving) moved_[it->first] = it->second.hub;
  if (it->second.unknown && it->second.unknown->exchange(false)) uncount_locked(it->first.tenant);
  hubs_.erase(it);
}

hub_actor hub_registry::spawn_locked(const stream_key& key, bool unknown) {
  hub_config cfg;
  cfg.stream = key;
  cfg.store = &store_;
  cfg.committer = &committer_;
  cfg.retention = defaults_.retention;
  cfg.ring_events = defaults_.ring_events;
  cfg.ring_bytes = defaults_.ring_bytes;
  cfg.metrics = defaults_.metrics;
  cfg.registry = this;
  auto* r = router();
  cfg.taken_over = r && !pinned_locked(key) && r->taken_over(key);
  // A stream this node owns may have a log on its previous holder (a
  // source or watch that moved here pins it first, then writes): pull it.
  // One pinned here against placement stays what this node has, unless a
  // record leads it: then it claims like any other (ADR 0021), or it would
  // serve its own copy whoever the record names.
  cfg.await_handoff = r && (!pinned_locked(key) || r->owner(key).empty() || r->has_record(key));
  std::shared_ptr<std::atomic<bool>> counted;
  if (unknown) {
    ++unknown_;
    ++unknown_by_tenant_[key.tenant];
    counted = std::make_shared<std::atomic<bool>>(true);
  }
  cfg.on_created = [this, counted, tenant = key.tenant] {
    std::lock_guard lock(mutex_);
    ++streams_by_tenant_[tenant];
    if (counted && counted->exchange(false)) uncount_locked(tenant);
  };
  // In a cluster a hub spawned again pulls its log from the stream's last
  // holder (ADR 0015): only a single node's hubs are released when idle.
  cfg.idle_release = r ? std::chrono::milliseconds(0) : defaults_.idle_release;
  // Every stream, a watch's notices and a source's events included: their
  // logs outlive the node that wrote them (issue 26). The watch's or
  // source's own position stays with that node's store (ADR 0016).
  if (r && core::readable_stream_name(key.name)) {
    cfg.replicator = [r, key](replication_sink_actor hub) {
      return r->spawn_replicator(key, std::move(hub));
    };
    cfg.node_id = r->self_id();
  }
  // Spawning under the lock is cheap (no I/O until the actor runs) and keeps
  // two threads from creating two hubs for one stream.
  bool pull = cfg.await_handoff;
  auto h = sys_.spawn(hub, std::move(cfg));
  hubs_.emplace(key, entry{h, {}, h, std::move(counted)});
  moved_.erase(key);
  if (pull) r->pull(key, h);
  return h;
}

std::vector<stream_actor> hub_registry::all() const {
  std::lock_guard lock(mutex_);
  std::vector<stream_actor> out;
  for (auto& [k, e] : hubs_) out.push_back(e.actor);
  for (auto& a : retired_)
    if (auto h = caf::actor_cast<stream_actor>(a)) out.push_back(h);
  return out;
}

std::size_t hub_registry::hub_count() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (auto& [k, e] : hubs_) n += e.owner.empty();
  return n;
}

std::size_t hub_registry::relay_count() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (auto& [k, e] : hubs_) n += !e.owner.empty();
  return n;
}

std::optional<hub_actor> hub_registry::moved_hub(const stream_key& key) const {
  std::lock_guard lock(mutex_);
  auto it = moved_.find(key);
  if (it == moved_.end()) return std::nullopt;
  return it->second;
}

void hub_registry::replace(const stream_key& key, const hub_actor& stale, const std::string& member) {
  if (auto* r = router()) r->fenced(key, member);
  std::lock_guard lock(mutex_);
  if (auto it = hubs_.find(key); it != hubs_.end() && it->second.hub && it->second.hub == stale) {
    drop_locked(it);
    moved_.erase(key);  // a fenced log is no one's to take
  }
}

void hub_registry::forget_moved(const stream_key& key) {
  std::lock_guard lock(mutex_);
  moved_.erase(key);
}

std::vector<std::pair<stream_key, hub_actor>> hub_registry::owned_hubs() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<stream_key, hub_actor>> out;
  for (auto& [k, e] : hubs_)
    if (e.hub) out.emplace_back(k, e.hub);
  return out;
}

}  // namespace tidings::actors
