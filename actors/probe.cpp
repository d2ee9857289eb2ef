#include "actors/probe.hpp"

namespace tidings::actors {

namespace {

// 100 us to 10 s: a sync-durability publish is one fsync (about 1-5 ms on
// an SSD), a batch one is far less; seconds mean the disk is stalling.
prometheus::Histogram::BucketBoundaries duration_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
}

}  // namespace

probe::probe(prometheus::Registry& registry)
    : published_(registry, "tidings_events_published_total",
                 "Events made durable, by the kind of stream they were published to", "stream_kind",
                 {"stream", "watch", "source"}),
      publish_duration_(prometheus::BuildHistogram()
                            .Name("tidings_publish_duration_seconds")
                            .Help("Time from a hub accepting a publish to its events being durable")
                            .Register(registry)
                            .Add({}, duration_buckets())),
      ring_bytes_(prometheus::BuildGauge()
                      .Name("tidings_hub_ring_bytes")
                      .Help("Bytes of recent frames the hubs keep in memory for fast resume")
                      .Register(registry)
                      .Add({})),
      filter_errors_(prometheus::BuildCounter()
                         .Name("tidings_filter_errors_total")
                         .Help("Events a watch's Lua filter failed on (reported as a filter error line)")
                         .Register(registry)
                         .Add({})),
      replication_stalled_(prometheus::BuildCounter()
                               .Name("tidings_replication_stalled_total")
                               .Help("Publishes answered 503 because the stream's followers did not confirm "
                                     "the write in time")
                               .Register(registry)
                               .Add({})),
      replication_fenced_(prometheus::BuildCounter()
                              .Name("tidings_replication_fenced_total")
                              .Help("Hubs that stepped down because a newer term of their stream was written")
                              .Register(registry)
                              .Add({})),
      released_(
          prometheus::BuildCounter()
              .Name("tidings_streams_released_total")
              .Help("Streams' hubs released from memory: idle ones (reason idle), and ones of streams never "
                    "created that every session left (reason unknown)")
              .Register(registry)) {}

std::string_view probe::stream_kind(std::string_view stream) {
  if (stream.starts_with("watch:")) return "watch";
  if (stream.starts_with("src:")) return "source";
  return "stream";
}

void probe::published(std::string_view stream, std::size_t events) {
  published_.add(stream_kind(stream), static_cast<double>(events));
}

void probe::publish_duration(std::chrono::steady_clock::duration d) {
  publish_duration_.Observe(std::chrono::duration<double>(d).count());
}

void probe::ring_bytes(std::int64_t delta) {
  ring_bytes_.Increment(static_cast<double>(delta));
}

void probe::filter_error() {
  filter_errors_.Increment();
}

void probe::replication_stalled() {
  replication_stalled_.Increment();
}

void probe::replication_fenced() {
  replication_fenced_.Increment();
}

void probe::stream_released(bool exists) {
  released_.Add({{"reason", exists ? "idle" : "unknown"}}).Increment();
}

}  // namespace tidings::actors
