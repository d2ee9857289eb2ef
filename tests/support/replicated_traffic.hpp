#pragma once

// Traffic for the replication scenarios: a publisher that sends numbered
// events at a steady rate, each with an Idempotency-Key and retried (on
// another node when its node is gone) until it is acknowledged, and SSE
// readers that keep reading one stream across their node's death by
// reconnecting elsewhere with Last-Event-ID, as EventSource does. Then one
// check: every reader got exactly the acknowledged events, once, in order.
//
// Each runs on its own thread; every wait is bounded.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.hpp"
#include "tests/support/sse_reading.hpp"

namespace tidings::testing {

class steady_publisher {
 public:
  // Publishes {"path":"/e","data":{"i":i}} for i in [first, first + count)
  // through targets[0] (later ones after a transport failure), `rate` per
  // second over `connections` keep-alive connections (event i on
  // connection i % connections, so a slow reply does not slow the rate).
  // An event whose publish is refused (503) or lost in transit is sent
  // again with the same key until acknowledged, for up to `retry_for`.
  steady_publisher(std::vector<client::endpoint> targets, std::string stream, int first, int count, int rate,
                   int connections = 4, std::chrono::milliseconds retry_for = std::chrono::seconds(30));
  ~steady_publisher();  // joins

  // Waits (bounded) until at least n events are acknowledged.
  bool await_acknowledged(int n, std::chrono::milliseconds timeout);
  // Waits for the thread to finish; true when every event was acknowledged.
  bool join(std::chrono::milliseconds timeout);

  // i -> its cursor, for the acknowledged ones.
  std::map<int, std::string> acknowledged() const;
  int retries() const { return retries_; }
  // The longest time one event took from its first attempt to its acknowledgement.
  std::chrono::milliseconds longest_wait() const;
  std::string failure() const;  // why it gave up, if it did

 private:
  void run(int lane);

  std::vector<client::endpoint> targets_;
  std::string stream_;
  int first_, count_, rate_, connections_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds retry_for_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, std::string> acked_;
  std::string failure_;
  int lanes_done_ = 0;
  std::atomic<int> retries_{0};
  std::chrono::milliseconds longest_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Reads `stream` on `targets[0]` from the epoch start of `since` (a cursor
// the stream had before the readers opened) until `expected` data events
// arrived or the deadline; when its connection closes it reconnects to the
// next target with Last-Event-ID. Control events (resync, closing, ...) are
// recorded and end the reading, except `closing` with `follow_closing`,
// which reconnects to the next target as a client following its
// reconnect_url would (a drained node's sessions).
class stream_reader {
 public:
  // `last`: reading also ends after an event it accepts.
  stream_reader(std::vector<client::endpoint> targets, std::string stream, std::string since,
                std::size_t expected, std::chrono::milliseconds deadline, bool follow_closing = false,
                std::function<bool(const data_event&)> last = {});
  ~stream_reader();  // joins

  // Blocks until the hello came (or throws with what came instead).
  void await_started(std::chrono::milliseconds timeout);
  void join();

  std::vector<data_event> events() const;
  std::vector<std::string> controls() const;  // "event data" of each control event
  int reconnects() const { return reconnects_; }

 private:
  void run();

  std::vector<client::endpoint> targets_;
  std::string stream_, since_;
  std::size_t expected_;
  std::chrono::steady_clock::time_point deadline_;
  bool follow_closing_;
  std::function<bool(const data_event&)> last_;
  mutable std::mutex mutex_;
  std::condition_variable started_cv_;
  bool started_ = false;
  std::string start_error_;
  std::vector<data_event> events_;
  std::vector<std::string> controls_;
  std::atomic<int> reconnects_{0};
  std::thread thread_;
};

// Adds what `from` acknowledged (event index -> cursor) to `into`.
void merge_acknowledged(std::map<int, std::string>& into, const std::map<int, std::string>& from);
// A steady_publisher run to its end: adds what it acknowledged to `into`,
// or throws with its failure when not every event was acknowledged within
// `timeout`.
void publish_steadily(std::map<int, std::string>& into, std::vector<client::endpoint> targets,
                      const std::string& stream, int first, int count, int rate = 500,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Empty when `got` is exactly the acknowledged events in cursor order, each
// once, with the payload acknowledged under its cursor, and nothing else
// (no event that was never acknowledged); else what differs, for the report.
std::string compare_with_acknowledged(const std::vector<data_event>& got,
                                      const std::map<int, std::string>& acked);

}  // namespace tidings::testing
