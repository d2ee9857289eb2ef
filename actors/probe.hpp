#pragma once

// Metrics of the hubs and the watch pipeline (docs/operations.md lists each
// one and what it means). One method per event; the hubs and filters call
// them from their actors' threads. Labels stay bounded: stream_kind is
// stream, watch or source, never a stream's name.

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <string_view>

#include "actors/metric_labels.hpp"

namespace tidings::actors {

class probe {
 public:
  explicit probe(prometheus::Registry& registry);

  // Events made durable on `stream` (the kind is read from its name).
  void published(std::string_view stream, std::size_t events);
  // From the hub receiving a publish to its write being durable.
  void publish_duration(std::chrono::steady_clock::duration d);
  // A hub's ring of recent frames grew or shrank by `delta` bytes.
  void ring_bytes(std::int64_t delta);
  // A watch's Lua filter failed on an event.
  void filter_error();
  // Replication (ADR 0017): a publish told to retry because the stream's
  // followers did not confirm its write in time; a hub fenced by a newer term.
  void replication_stalled();
  void replication_fenced();
  // A hub released: its stream idle (exists) or never created and left by
  // every session (issue 28).
  void stream_released(bool exists);

  // "watch" for watch:NAME, "source" for src:KEY, else "stream".
  static std::string_view stream_kind(std::string_view stream);

 private:
  labelled_counter published_;
  prometheus::Histogram& publish_duration_;
  prometheus::Gauge& ring_bytes_;
  prometheus::Counter& filter_errors_;
  prometheus::Counter& replication_stalled_;
  prometheus::Counter& replication_fenced_;
  prometheus::Family<prometheus::Counter>& released_;
};

}  // namespace tidings::actors
