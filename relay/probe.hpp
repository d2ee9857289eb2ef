#pragma once

// Metrics of the SSE sessions and the node's fan-out (docs/operations.md).
// One method per event, called on the I/O threads (and, for 401s at the
// front door, by the broker). Labels are bounded sets: resync and
// unauthorized reasons, never a session, subject or stream.

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <string_view>

#include "actors/metric_labels.hpp"

namespace tidings::relay {

class probe {
 public:
  explicit probe(prometheus::Registry& registry);

  void session_opened();
  void session_closed();
  // `events` data events handed to a session's socket in one write.
  void delivered(std::size_t events);
  // From the hub learning an event was durable to the session writing it
  // (one observation per write, for its oldest live event).
  void delivery_lag(std::chrono::steady_clock::duration d);
  // A session ended with `resync` (unknown_stream, epoch_changed,
  // cursor_too_old, cursor_ahead, slow_consumer).
  void resync(std::string_view reason);
  // A request refused with 401 (the token_problem's name) or a session
  // ended with `unauthorized` (expired, revoked, key_removed, tenant_removed).
  void unauthorized(std::string_view reason);
  // An I/O shard took or dropped its one feed from a stream's hub.
  void feed_opened();
  void feed_closed();

 private:
  prometheus::Gauge& sessions_;
  prometheus::Counter& opened_;
  prometheus::Counter& delivered_;
  prometheus::Histogram& lag_;
  actors::labelled_counter resync_;
  actors::labelled_counter unauthorized_;
  prometheus::Gauge& feeds_;
};

}  // namespace tidings::relay
