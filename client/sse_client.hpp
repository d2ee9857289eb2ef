#pragma once

// A blocking SSE reader: opens GET `target`, and hands out one parsed message
// at a time, each read bounded by a timeout. Used by the CLI and tests.

#include <chrono>
#include <memory>
#include <string>

#include "client/http_client.hpp"
#include "core/sse_parser.hpp"

namespace tidings::client {

class sse_stream {
 public:
  // Connects and reads the response header. Throws transport_error when the
  // connection or the header cannot be had within `timeout`.
  sse_stream(const endpoint& ep, const std::string& target, const header_list& headers = {},
             std::chrono::milliseconds timeout = default_timeout);
  ~sse_stream();
  sse_stream(const sse_stream&) = delete;
  sse_stream& operator=(const sse_stream&) = delete;

  int status() const;  // HTTP status of the response
  const std::string& content_type() const;
  // For a non-200 response: the whole (JSON) error body.
  const std::string& error_body() const;

  enum class result { message, timeout, closed };
  // Waits up to `timeout` for the next message. `closed`: the server ended the
  // stream (or the connection dropped) and no message is pending.
  result next(core::sse_message& out, std::chrono::milliseconds timeout);

  // The id of the last message that had one (what EventSource would send as Last-Event-ID).
  std::string last_event_id() const;

  // Stops reading without closing the socket (the server's writes pile up in
  // the socket buffers): used to play a slow consumer. From then on next()
  // only hands out messages already parsed and otherwise returns timeout at once.
  void pause_reading();
  void close();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tidings::client
