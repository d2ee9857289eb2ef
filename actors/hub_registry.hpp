#pragma once

// Finds or spawns the hub of a stream. Thread-safe: I/O threads call it.

#include <map>
#include <mutex>
#include <vector>

#include "actors/hub.hpp"

namespace tidings::actors {

struct hub_defaults {
  core::retention_policy retention;
  std::size_t ring_events = 1024;
  std::size_t ring_bytes = 1 << 20;
  // Hubs kept for streams that subscribers wait on but nobody has published
  // to yet. Each costs memory for as long as the node runs, so they are capped.
  std::size_t max_unknown_streams = 10000;
  probe* metrics = nullptr;  // null: not measured
};

class hub_registry {
 public:
  hub_registry(caf::actor_system& sys, persistence::store& store, persistence::group_committer& committer,
               hub_defaults defaults);

  // The stream's hub, spawned on first use (for a publish or a subscriber;
  // the stream itself is created by its first publish).
  hub_actor get(const stream_key& key);

  // For a subscriber: makes sure the stream's hub exists. False when the
  // stream does not exist yet and max_unknown_streams such hubs are held.
  bool admit_subscriber(const stream_key& key);

  // The node's hub and watch metrics (null: not measured).
  probe* metrics() const { return defaults_.metrics; }

  // Every hub spawned so far (for shutdown).
  std::vector<hub_actor> all() const;

 private:
  caf::actor_system& sys_;
  persistence::store& store_;
  persistence::group_committer& committer_;
  hub_defaults defaults_;
  hub_actor spawn_locked(const stream_key& key, bool unknown);

  mutable std::mutex mutex_;
  std::size_t unknown_ = 0;  // hubs whose stream does not exist yet
  std::map<stream_key, hub_actor> hubs_;
};

}  // namespace tidings::actors
