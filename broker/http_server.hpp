#pragma once

// The front door: accepts connections on one port and spreads them over the
// I/O shards round-robin. Each connection reads requests (bounded header and
// body, idle timeout), routes them, and writes replies while keep-alive; an
// SSE request hands its socket over to a relay::sse_session on the same shard.
// All Boost.Beast code lives behind this header, in one translation unit.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/api.hpp"
#include "relay/io_shard.hpp"

namespace tidings::broker {

struct http_limits {
  std::size_t max_header_bytes = 16 << 10;
  std::size_t max_body_bytes = 1 << 20;
  std::chrono::seconds idle_timeout{60};
};

class http_server {
 public:
  http_server(std::vector<std::shared_ptr<relay::io_shard>> shards, api& routes, http_limits limits,
              const relay::sse_options& sse);
  ~http_server();

  // Binds and listens; an error message when that fails.
  std::optional<std::string> listen(const std::string& host, std::uint16_t port);
  std::uint16_t port() const;
  void start();
  // Stops accepting new connections (thread-safe).
  void stop_accepting();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace tidings::broker
