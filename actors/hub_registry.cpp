#include "actors/hub_registry.hpp"

namespace tidings::actors {

hub_registry::hub_registry(caf::actor_system& sys, persistence::store& store,
                           persistence::group_committer& committer, hub_defaults defaults)
    : sys_(sys), store_(store), committer_(committer), defaults_(defaults) {}

hub_actor hub_registry::get(const stream_key& key) {
  std::lock_guard lock(mutex_);
  auto it = hubs_.find(key);
  if (it != hubs_.end()) return it->second;
  return spawn_locked(key, false);
}

bool hub_registry::admit_subscriber(const stream_key& key) {
  std::lock_guard lock(mutex_);
  if (hubs_.contains(key)) return true;
  std::optional<persistence::stream_meta> meta;
  if (auto s = store_.get_stream(key.tenant, key.name, &meta); !s.ok()) return false;
  if (!meta && unknown_ >= defaults_.max_unknown_streams) return false;
  spawn_locked(key, !meta);
  return true;
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
  if (unknown) {
    ++unknown_;
    cfg.on_created = [this] {
      std::lock_guard lock(mutex_);
      --unknown_;
    };
  }
  // Spawning under the lock is cheap (no I/O until the actor runs) and keeps
  // two threads from creating two hubs for one stream.
  auto h = sys_.spawn(hub, std::move(cfg));
  hubs_.emplace(key, h);
  return h;
}

std::vector<hub_actor> hub_registry::all() const {
  std::lock_guard lock(mutex_);
  std::vector<hub_actor> out;
  for (auto& [k, h] : hubs_) out.push_back(h);
  return out;
}

}  // namespace tidings::actors
