#pragma once

// An asynchronous HTTP/1.1 client (Boost.Beast) for the connectors and the
// etcd client: one-shot requests (poll, webhook backend reads, MCP POSTs,
// Kubernetes lists, etcd calls) and streamed responses (Kubernetes and etcd
// watches, MCP's SSE streams), whose body arrives in pieces as the server
// sends them.
//
// Every call is bounded: a connect+headers timeout, a body size cap for
// one-shot requests, an idle timeout for streams. Errors are values.
// Callbacks run on the io_context's thread; none runs after cancel().

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "net/tls_context.hpp"

namespace tidings::net {

using http_headers = std::vector<std::pair<std::string, std::string>>;

struct http_request {
  std::string method = "GET";
  std::string url;  // http[s]://host[:port]/path?query
  http_headers headers;
  std::string body;
  // Connect, send and receive the response head within this.
  std::chrono::milliseconds timeout{10000};
  // One-shot: the whole body must arrive within timeout too, and be at most this.
  std::size_t max_body_bytes = 8 * 1024 * 1024;
  // Streams: end with an error when nothing arrives for this long (0: never).
  std::chrono::milliseconds idle_timeout{0};
  // For https:// URLs: the upstream's context (make_tls_client_context);
  // null for default_tls_client_context(). Unused for http://.
  std::shared_ptr<tls_context> tls;
};

struct http_response {
  int status = 0;
  http_headers headers;  // names lowercased
  std::string body;

  // The first value of a header (name lowercase), or "".
  const std::string& header(std::string_view name) const;
};

struct http_result {
  std::string error;  // "" on success (any status counts as success)
  http_response response;
};

// A request in flight; dropping the last reference does not cancel it.
class http_call {
 public:
  virtual ~http_call() = default;
  // No callback runs after this returns; the connection is closed.
  virtual void cancel() = 0;
};

std::shared_ptr<http_call> http_fetch(boost::asio::io_context& ioc, http_request req,
                                      std::function<void(http_result)> done);

struct http_stream_handlers {
  // The status and headers (response.body empty). Called once.
  std::function<void(const http_response& head)> head;
  // Body bytes as they arrive, chunked transfer coding already removed.
  std::function<void(std::string_view data)> data;
  // The stream ended: error "" when the server ended it cleanly. Called once,
  // also when connecting or the head failed (then head was not called).
  std::function<void(std::string error)> end;
};

std::shared_ptr<http_call> http_open_stream(boost::asio::io_context& ioc, http_request req,
                                            http_stream_handlers handlers);

// "http[s]://host:port/path?q" split; false (with *error) for anything else.
struct http_url {
  bool tls = false;  // https
  std::string host;
  std::string port;    // "80" (http) or "443" (https) when absent
  std::string target;  // "/path?q", "/" when absent
};
bool parse_http_url(std::string_view url, http_url* out, std::string* error);

}  // namespace tidings::net
