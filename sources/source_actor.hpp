#pragma once

// One source: an upstream subscription for one canonical source key,
// feeding the stream src:<hash> (DESIGN.md "source", issue 4).
//
//   starting ──subscribed──> first read ──ok──> running      (joiners: ok)
//      └──ended / read failed (first time) ──> quit          (joiners: the upstream's error)
//   running ──updated──> read ──> publish events + snapshot ──> running
//                       (an update during a read or publish: one more read after it)
//   running ──ended──> resubscribing: backoff 1, 2, 4, 8, 16 s, subscribe again
//                          ├──subscribed──> read (the diff covers the gap) ──> running
//                          └──5th failure──> retrying: ERROR event on the stream, then
//                               every 16 s less up to a fifth (core/retry_schedule)
//                               └──subscribed──> read: GAP event first ──> running
//   any ──close──> upstream closed (unsubscribe on the upstream side), quit
//   a step that throws (a bug) ──> ERROR event "source_failed", quit
//
// Nothing runs on a timer while the subscription is healthy.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "actors/hub_actor.hpp"
#include "core/resource_tracker.hpp"
#include "persistence/group_commit.hpp"
#include "sources/probe.hpp"
#include "sources/source_actors.hpp"
#include "sources/source_status.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources {

struct source_config {
  std::string tenant;
  std::string uri;  // as routed (canonical)
  std::string key;
  std::string stream;
  connector* upstreams = nullptr;  // used on the sources thread only
  boost::asio::io_context* loop = nullptr;
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  // The hub of `stream` now, asked at every write: in a cluster a fenced
  // hub is replaced by one that takes the log over.
  std::function<actors::stream_actor()> hub;
  std::shared_ptr<source_status> status;
  probe* metrics = nullptr;  // null: not measured
  // Waits before each resubscribe attempt; past the last, it is repeated
  // (with jitter) until the upstream is back.
  std::vector<std::chrono::milliseconds> backoff = {std::chrono::seconds(1), std::chrono::seconds(2),
                                                    std::chrono::seconds(4), std::chrono::seconds(8),
                                                    std::chrono::seconds(16)};
};

// The upstream, touched only on the sources thread; the actor holds it
// through this slot so that it is created and destroyed there.
struct upstream_slot {
  std::unique_ptr<upstream> up;
};

struct source_state {
  static inline const char* name = "source";

  enum class phase { starting, running, resubscribing, retrying, failed };

  // The upstream has been away past the backoff steps.
  struct outage {
    std::chrono::steady_clock::time_point since;      // when the source started retrying
    std::unique_ptr<probe::retrying_source> counted;  // in the metrics while it lasts
    std::string notice;                               // its ERROR event's message, until sent
    bool announcing = false;                          // that event is being stored
  };

  source_config cfg;
  std::shared_ptr<upstream_slot> slot = std::make_shared<upstream_slot>();
  core::resource_tracker tracker;  // as of the last committed read
  phase at = phase::starting;
  std::vector<source_join_ptr> joiners;
  std::uint64_t generation = 0;                     // of the current subscribe attempt
  std::size_t failures = 0;                         // consecutive, since the last good read
  bool reading = false;                             // a read is in flight (of this generation)
  bool committing = false;                          // a read's events and snapshot are being stored
  bool read_again = false;                          // an update came meanwhile: read once more after
  std::optional<actors::watch_error> start_error;   // why the first subscribe or read failed
  std::string strategy;                             // the upstream's, once it is open
  std::unique_ptr<probe::active_watcher> watching;  // counts this source while it lives
  std::string key_prefix;                           // of its writes' Idempotency-Keys
  std::uint64_t writes = 0;                         // reads written with events, for their keys
  std::optional<outage> down;                       // set while retrying, until a read is stored
  std::minstd_rand jitter{std::random_device{}()};  // for the retries past the steps
};

source_actor::behavior_type source(source_actor::stateful_pointer<source_state> self, source_config cfg);

// The ERROR event ("source_failed": true) that tells a source's subscribers it
// ended for good: every watch on it fails, SSE sessions see it. Published by
// a source that gave up, and by the registry when a reload ends one.
core::event source_failed_event(const std::string& uri, const std::string& message);

}  // namespace tidings::sources
