#pragma once

// The broker's view of an HTTP exchange, kept free of Beast so that handlers
// compile quickly and can be tested without sockets.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "relay/sse_options.hpp"

namespace tidings::broker {

struct http_request {
  std::string method;
  std::string path;                                        // decoded target path, no query
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::map<std::string, std::string> headers;              // names lowercased
  std::string body;
  bool from_loopback = true;

  const std::string* header(const std::string& lower_name) const;
  std::vector<std::string> query_all(std::string_view name) const;
  const std::string* query_one(std::string_view name) const;
};

struct http_response {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // An answer that turns the connection into an SSE session (a route that
  // had to wait for something first, e.g. a source's first read).
  std::optional<relay::sse_request> sse;
  // Runs once the answer has been written (or the write failed): for what
  // must not happen before the client has it, e.g. a drain that stops the
  // I/O threads.
  std::function<void()> after_sent;
};

// {"error": message} with the given status.
http_response error_response(unsigned status, std::string_view message);
// The body as compact JSON (invalid UTF-8 replaced) with the given status.
http_response json_response(unsigned status, const nlohmann::json& body);

// Splits "/a/b?x=1&y=%2F" into a decoded path and query pairs. Refuses
// malformed percent-encoding, and an encoded '/' in the path: decoded
// before routing it would move a segment boundary (issue 28).
enum class target_check { ok, malformed, encoded_slash };
target_check parse_target(std::string_view target, std::string& path,
                          std::vector<std::pair<std::string, std::string>>& query);

}  // namespace tidings::broker
