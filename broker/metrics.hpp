#pragma once

// The node's Prometheus registry and the probes of its subsystems, and the
// text GET /metrics serves (docs/operations.md lists every metric). The
// subsystems count as things happen; RocksDB's figures and the cluster's
// membership are read at each scrape.

#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "actors/probe.hpp"
#include "persistence/store.hpp"
#include "persistence/write_guard.hpp"
#include "relay/probe.hpp"
#include "sources/probe.hpp"

namespace tidings::broker {

class metrics {
 public:
  metrics(const persistence::store& store, sources::probe::audit_fn audit);
  // The node's write guard (set once at start): free space and refusals.
  void set_write_guard(const persistence::write_guard* guard) { guard_ = guard; }

  actors::probe& hubs() { return hubs_; }
  relay::probe& relay() { return relay_; }
  sources::probe& sources() { return sources_; }

  // Everything, in the Prometheus text format (version 0.0.4).
  std::string scrape() const;
  static constexpr const char* content_type = "text/plain; version=0.0.4; charset=utf-8";

 private:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  actors::probe hubs_;
  relay::probe relay_;
  sources::probe sources_;
  const persistence::store& store_;
  const persistence::write_guard* guard_ = nullptr;
};

}  // namespace tidings::broker
