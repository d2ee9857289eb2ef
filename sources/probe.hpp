#pragma once

// Metrics and audit lines of the upstream watchers (the sources), so an
// operator can tell "nothing changed upstream" from "the watch is broken"
// (docs/operations.md). One method per event, called from source actors.
// The `strategy` label is upstream::strategy(): a handful of values.

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "actors/metric_labels.hpp"

namespace tidings::sources {

class probe {
 public:
  // Writes one audit line (event name, fields); may be empty. Called from
  // the source actors' threads, so it must be thread-safe.
  using audit_fn = std::function<void(std::string_view event, const nlohmann::json& fields)>;

  probe(prometheus::Registry& registry, audit_fn audit);

  // While one of these lives, its strategy counts one active watcher.
  class active_watcher {
   public:
    active_watcher(probe& p, std::string strategy);
    ~active_watcher();
    active_watcher(const active_watcher&) = delete;
    active_watcher& operator=(const active_watcher&) = delete;

   private:
    probe& probe_;
    std::string strategy_;
  };

  // While one of these lives, a source is past its backoff steps and
  // retrying (tidings_sources_retrying): made when it starts retrying,
  // dropped when it heals or ends. Audits both.
  class retrying_source {
   public:
    retrying_source(probe& p, std::string tenant, std::string uri, const std::string& reason);
    ~retrying_source();
    retrying_source(const retrying_source&) = delete;
    retrying_source& operator=(const retrying_source&) = delete;
    // It heals: audited as recovered when it goes.
    void recovered(std::int64_t down_ms) { down_ms_ = down_ms; }

   private:
    probe& probe_;
    std::string tenant_;
    std::string uri_;
    std::int64_t down_ms_ = -1;
  };

  // The upstream said the resource changed (one audit line per fire).
  void fired(std::string_view strategy, const std::string& tenant, const std::string& uri,
             std::uint64_t subscribers);
  // A read turned into `events` events on the source's stream.
  void notifications_sent(std::string_view strategy, std::size_t events);
  // A poll could not fetch (the subscription goes on; the next tick retries).
  void poll_failed(const std::string& tenant, const std::string& uri, const std::string& error);
  // The subscription ended and will be made again after a backoff.
  void resubscribing(const std::string& tenant, const std::string& uri, const std::string& reason);
  // The source gave up (or could not start): its subscribers see an error.
  void failed(const std::string& tenant, const std::string& uri, const std::string& error);

 private:
  void audit(std::string_view event, const nlohmann::json& fields) const {
    if (audit_) audit_(event, fields);
  }

  actors::labelled_gauge active_;
  actors::labelled_counter fired_;
  actors::labelled_counter sent_;
  prometheus::Counter& poll_failures_;
  prometheus::Counter& resubscribes_;
  prometheus::Counter& failures_;
  prometheus::Gauge& retrying_;
  audit_fn audit_;
};

}  // namespace tidings::sources
