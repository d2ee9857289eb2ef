#pragma once

// The K publishers on a thread and io_context of their own. On the main
// loop, an ack that is ready would wait behind reads of a thousand SSE
// sockets, which slows publishing and inflates ack latency by the client's
// own backlog rather than the server's.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "apps/tidings_load/latency_histogram.hpp"
#include "apps/tidings_load/load_options.hpp"
#include "apps/tidings_load/publisher.hpp"

namespace tidings::load {

class publisher_group final : private publish_source {
 public:
  // `ok` false carries why publishing failed.
  using done_handler = std::function<void(bool ok, const std::string& why)>;

  // Publishes events [first, end) (default: all of the run's).
  publisher_group(const boost::asio::ip::tcp::endpoint& server, const load_options& opts,
                  const std::string& pad, std::size_t first = 0, std::size_t end = SIZE_MAX);
  ~publisher_group();
  publisher_group(const publisher_group&) = delete;
  publisher_group& operator=(const publisher_group&) = delete;

  // Connects the publishers and starts the thread. `on_done` runs once, on
  // `home`: when every event is acked or at the first failure.
  void start(boost::asio::io_context& home, done_handler on_done);
  // Before start: `fn` runs on `home` once `acks` events are acknowledged.
  void notify_at(std::size_t acks, std::function<void()> fn) {
    notify_at_ = acks;
    on_notify_ = std::move(fn);
  }
  // Before start: see publisher::retry_until_acked.
  void retry_until_acked(std::chrono::milliseconds give_up_after);
  // Stops the thread wherever it is and joins it; call from `home`.
  void stop();

  std::size_t count() const { return publishers_.size(); }
  // Which of the run's streams event `index` goes to.
  std::size_t stream_of(std::int64_t index) const;
  // Safe from any thread: for progress messages.
  std::size_t acks() const { return acks_.load(std::memory_order_relaxed); }
  // Only after stop().
  const latency_histogram& ack_latencies() const { return ack_latencies_; }
  std::int64_t last_ack_ns() const { return last_ack_ns_; }

 private:
  bool next_batch(publish_batch& batch) override;
  void on_ack(const publish_batch& batch, std::int64_t sent_ns, std::int64_t acked_ns) override;
  void on_publish_failure(const std::string& why) override;
  void report(bool ok, const std::string& why);

  // Declared before the publishers: their sockets must go first.
  boost::asio::io_context ioc_{1};
  std::vector<std::string> head_prefixes_;  // one per stream, before the publishers that use them
  std::vector<std::unique_ptr<publisher>> publishers_;
  std::thread thread_;
  std::size_t first_;
  std::size_t events_;  // one past the last index
  std::size_t batch_;
  std::size_t streams_;
  double rate_;
  std::int64_t start_ns_ = 0;
  boost::asio::io_context* home_ = nullptr;
  done_handler on_done_;
  bool reported_ = false;
  std::size_t notify_at_ = 0;
  std::function<void()> on_notify_;

  // Touched only on the group's thread until it is joined.
  std::size_t next_;
  std::int64_t last_ack_ns_ = 0;
  latency_histogram ack_latencies_;
  std::atomic<std::size_t> acks_{0};
};

}  // namespace tidings::load
