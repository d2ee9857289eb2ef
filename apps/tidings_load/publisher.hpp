#pragma once

// One keep-alive publishing connection: sends a request (one event or a
// batch), waits for its ack, sends the next, so K publishers keep K requests
// in flight. With a rate, each request waits for its due time first. Raw asio.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "apps/tidings_load/chunked_decoder.hpp"
#include "apps/tidings_load/load_options.hpp"

namespace tidings::load {

// What one request carries.
struct publish_batch {
  std::int64_t first = 0;   // index of its first event
  std::size_t count = 1;    // consecutive indexes
  std::size_t stream = 0;   // which of the run's streams
  std::int64_t due_ns = 0;  // steady time it is due (0: at once)
};

class publish_source {
 public:
  // The next request to send; false when every event has been handed out.
  virtual bool next_batch(publish_batch& batch) = 0;
  // `sent_ns` is the due time when there is one: latency counts from when
  // the request should have gone, so a late send is not hidden.
  virtual void on_ack(const publish_batch& batch, std::int64_t sent_ns, std::int64_t acked_ns) = 0;
  virtual void on_publish_failure(const std::string& why) = 0;

 protected:
  ~publish_source() = default;
};

class publisher {
 public:
  // `number` travels in every payload so receivers can check each
  // publisher's order on its own.
  // `head_prefixes`: publish_head_prefix of each stream, index by stream.
  publisher(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& server, target peer,
            const std::vector<std::string>& head_prefixes, std::size_t number, const std::string& pad,
            publish_source& source);
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;

  void start();
  void close();
  // The restart scenario: every request carries an Idempotency-Key, and a
  // connection that fails (the node was killed) is made again and the same
  // request sent until it is acknowledged, for at most `give_up_after`.
  void retry_until_acked(std::chrono::milliseconds give_up_after) { give_up_after_ = give_up_after; }

 private:
  void connect();
  void transport_failure(const std::string& why);
  void send_next();
  void send(std::int64_t sent_ns);
  void write_request();
  void read_reply();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void fail(const std::string& why);

  boost::asio::ip::tcp::socket socket_;
  boost::asio::ip::tcp::endpoint server_;
  target peer_;
  std::size_t number_;
  const std::vector<std::string>& head_prefixes_;
  boost::asio::steady_timer pace_;
  const std::string& pad_;
  publish_source& source_;
  std::string request_;
  std::string reply_;
  char read_buf_[4096];
  publish_batch batch_;
  std::int64_t sent_ns_ = 0;
  std::chrono::milliseconds give_up_after_{0};  // 0: the first failure ends the run
  std::int64_t failing_since_ns_ = 0;           // first failure since the last ack (0: none)
  bool unacked_ = false;                        // request_ was sent and not answered yet
  bool done_ = false;
};

}  // namespace tidings::load
