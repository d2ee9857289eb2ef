#pragma once

// The front door: accepts connections on one port (and an HTTPS one) and spreads them over the
// I/O shards round-robin. Each connection reads requests (bounded header and
// body, each phase under its own deadline), routes them, and writes replies
// while keep-alive; an SSE request hands its socket over to a
// relay::sse_session on the same shard. Open connections, SSE sessions
// included, are counted per node and per client address; past either limit a
// new connection gets a 429 and is closed without being read.
// All Boost.Beast code lives behind this header, in one translation unit.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/api.hpp"
#include "relay/io_shard.hpp"

namespace tidings::net {
class tls_server_keys;
}

namespace tidings::broker {

struct http_limits {
  std::size_t max_header_bytes = 16 << 10;
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_header_count = 100;  // fields in one header block; past it 431
  // Waiting for the first byte of a request (also between keep-alive
  // requests); it also bounds reading a request's body, and writing a reply.
  std::chrono::milliseconds idle_timeout{60000};
  // From the first byte of a request until its header block is complete: a
  // client that dribbles header bytes (slowloris) is closed when it passes.
  std::chrono::milliseconds header_timeout{10000};
  // Open TCP connections, SSE sessions included; past either a new
  // connection is answered 429 and closed.
  std::size_t max_connections = 10000;
  std::size_t max_connections_per_address = 256;
};

class http_server {
 public:
  http_server(std::vector<std::shared_ptr<relay::io_shard>> shards, api& routes, http_limits limits,
              const relay::sse_options& sse);
  ~http_server();

  // Binds and listens; an error message when that fails.
  std::optional<std::string> listen(const std::string& host, std::uint16_t port);
  // An HTTPS port beside the plain one, whose connections take the
  // context `keys` holds when each is accepted (a reload swaps it).
  std::optional<std::string> listen_tls(const std::string& host, std::uint16_t port,
                                        std::shared_ptr<net::tls_server_keys> keys);
  std::uint16_t port() const;
  std::uint16_t tls_port() const;  // 0 without an HTTPS port
  void start();
  // Stops accepting new connections (thread-safe).
  void stop_accepting();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace tidings::broker
