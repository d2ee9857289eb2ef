#include "relay/probe.hpp"

namespace tidings::relay {

namespace {

// 50 us to 5 s: a live event reaches an idle session's socket within a
// millisecond or so; tens of milliseconds mean the I/O threads are behind.
prometheus::Histogram::BucketBoundaries lag_buckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
}

}  // namespace

probe::probe(prometheus::Registry& registry)
    : sessions_(prometheus::BuildGauge()
                    .Name("tidings_sse_sessions")
                    .Help("SSE sessions open on this node")
                    .Register(registry)
                    .Add({})),
      opened_(prometheus::BuildCounter()
                  .Name("tidings_sse_sessions_opened_total")
                  .Help("SSE sessions opened on this node")
                  .Register(registry)
                  .Add({})),
      delivered_(prometheus::BuildCounter()
                     .Name("tidings_events_delivered_total")
                     .Help("Data events written to SSE sessions (one per event per session)")
                     .Register(registry)
                     .Add({})),
      lag_(prometheus::BuildHistogram()
               .Name("tidings_delivery_lag_seconds")
               .Help("From an event being durable to a live session writing it (oldest event of each write)")
               .Register(registry)
               .Add({}, lag_buckets())),
      resync_(registry, "tidings_resync_total", "SSE sessions ended with a resync event, by reason", "reason",
              {"unknown_stream", "epoch_changed", "cursor_too_old", "cursor_ahead", "slow_consumer"}),
      unauthorized_(registry, "tidings_unauthorized_total",
                    "Requests refused with 401 and SSE sessions ended with unauthorized, by reason", "reason",
                    {"malformed", "algorithm", "unknown_key", "signature", "expired", "not_yet_valid",
                     "claims", "revoked", "key_removed", "tenant_removed"}),
      feeds_(
          prometheus::BuildGauge()
              .Name("tidings_relay_feeds")
              .Help(
                  "Hub feeds held by this node's I/O threads (one per stream and thread with live sessions)")
              .Register(registry)
              .Add({})) {}

void probe::session_opened() {
  sessions_.Increment();
  opened_.Increment();
}

void probe::session_closed() {
  sessions_.Decrement();
}

void probe::delivered(std::size_t events) {
  delivered_.Increment(static_cast<double>(events));
}

void probe::delivery_lag(std::chrono::steady_clock::duration d) {
  lag_.Observe(std::chrono::duration<double>(d).count());
}

void probe::resync(std::string_view reason) {
  resync_.add(reason);
}

void probe::unauthorized(std::string_view reason) {
  unauthorized_.add(reason);
}

void probe::feed_opened() {
  feeds_.Increment();
}

void probe::feed_closed() {
  feeds_.Decrement();
}

}  // namespace tidings::relay
