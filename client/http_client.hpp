#pragma once

// A small blocking HTTP/1.1 client for the CLI and the tests (Boost.Beast).
// Every call has a timeout; failures to connect, send or receive throw
// client::transport_error (the HTTP status of a received response never throws).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tidings::client {

struct endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
};
// "HOST:PORT", "PORT" or "http://HOST:PORT"; throws std::invalid_argument.
endpoint parse_endpoint(const std::string& text);

class transport_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

inline constexpr std::chrono::milliseconds default_timeout{10000};

// One keep-alive connection; requests on it run one after another.
class http_connection {
 public:
  explicit http_connection(const endpoint& ep, std::chrono::milliseconds timeout = default_timeout);
  ~http_connection();
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;

  http_response request(const std::string& method, const std::string& target, const std::string& body = {},
                        const header_list& headers = {});

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// One request on a fresh connection.
http_response request(const endpoint& ep, const std::string& method, const std::string& target,
                      const std::string& body = {}, const header_list& headers = {},
                      std::chrono::milliseconds timeout = default_timeout);

// Sends `raw` bytes as they are and returns everything the server sends back
// until it closes the connection or `timeout` passes (for malformed-request tests).
std::string raw_exchange(const endpoint& ep, const std::string& raw,
                         std::chrono::milliseconds timeout = default_timeout);

// Percent-encodes a query parameter value.
std::string url_encode(const std::string& value);

}  // namespace tidings::client
