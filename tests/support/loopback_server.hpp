#pragma once

// A tiny scripted HTTP peer for the HTTP client tests (client/ and sources/http): listens on 127.0.0.1 port
// 0 and runs `script` on its own thread for every accepted connection, with
// plain blocking asio, so each test says byte for byte what the server does.

#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>

#include "client/http_client.hpp"

namespace tidings::testing {

using tcp_socket = boost::asio::ip::tcp::socket;

class loopback_server {
 public:
  using script = std::function<void(tcp_socket&)>;
  explicit loopback_server(script s);
  // Joins every connection thread: clients must be gone (or the scripts done) by then.
  ~loopback_server();
  loopback_server(const loopback_server&) = delete;
  loopback_server& operator=(const loopback_server&) = delete;

  client::endpoint address() const;
  unsigned short port() const;
  std::string url(const std::string& target) const;
  int accepted() const { return accepted_.load(); }

 private:
  void accept_loop();

  script script_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread accept_thread_;
  std::mutex mutex_;
  std::vector<std::thread> connections_;
};

// Reads one request (head and Content-Length body); empty when the peer closed.
std::string read_request(tcp_socket& s);
// The same from any blocking stream (a TLS stream, tests/support/tls_loopback_server.hpp).
template <class SyncStream>
std::string read_http_request(SyncStream& s) {
  namespace asio = boost::asio;
  std::string buf;
  boost::system::error_code ec;
  const auto head_len = asio::read_until(s, asio::dynamic_buffer(buf), "\r\n\r\n", ec);
  if (ec) return {};
  std::string lower = buf.substr(0, head_len);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t length = 0;
  if (const auto at = lower.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::stoul(lower.substr(at + 17));
  if (buf.size() < head_len + length)
    asio::read(s, asio::dynamic_buffer(buf), asio::transfer_exactly(head_len + length - buf.size()), ec);
  return buf;
}
// Errors are ignored: a client under test may have hung up on purpose.
void write_all(tcp_socket& s, const std::string& bytes);
// Blocks until the peer closes its side.
void wait_for_close(tcp_socket& s);
// The chunked encoding of `body` cut into chunks of the given sizes (cycled).
std::string chunked(const std::string& body, const std::vector<std::size_t>& sizes);
// One chunk of the chunked transfer coding.
std::string chunk(const std::string& bytes);

// A one-shot signal from the test to a script; waiting is bounded so a
// failed test cannot hang the run.
class gate {
 public:
  void open() { promise_.set_value(); }
  bool wait() { return future_.wait_for(std::chrono::seconds(10)) == std::future_status::ready; }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

}  // namespace tidings::testing
