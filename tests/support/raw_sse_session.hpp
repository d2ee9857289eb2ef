#pragma once

// An SSE session on a plain blocking socket whose reading the test controls
// completely: it reads only inside next(). sse_stream::pause_reading() cannot
// be undone, but the slow-consumer scenario must stall a session and later
// read what the server left for it (the buffered frames, then `resync`). The
// receive buffer is set small before connecting so the kernel absorbs little
// while the session stalls, and the server's own queue is what overflows.

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/sse_parser.hpp"
#include "tests/support/tls_client.hpp"

namespace tidings::testing {

class raw_sse_session {
 public:
  using result = client::sse_stream::result;

  // Connects, sends `GET target` and reads the response header. Throws
  // std::runtime_error on failure or when the status is not 200.
  raw_sse_session(const client::endpoint& ep, const std::string& target, std::chrono::milliseconds timeout,
                  int receive_buffer_bytes = 4096);
  // The same over HTTPS, on a connection whose handshake is done; `headers`
  // go into the request as written ("Last-Event-ID: X\r\n").
  raw_sse_session(std::unique_ptr<tls_client> tls, const std::string& target, const std::string& headers,
                  std::chrono::milliseconds timeout);
  ~raw_sse_session();
  raw_sse_session(const raw_sse_session&) = delete;
  raw_sse_session& operator=(const raw_sse_session&) = delete;

  // Reads from the socket only while a message is wanted and none is parsed yet.
  result next(core::sse_message& out, std::chrono::milliseconds timeout);

 private:
  // Reads once (bounded); false on timeout. Sets eof_ at the end of the stream.
  bool read_some(std::chrono::steady_clock::time_point deadline, std::string& into);
  void feed_body(std::string_view bytes);
  // Sends the request and reads the response header; throws when not 200.
  void open(const std::string& request, std::chrono::steady_clock::time_point deadline);
  void send_all(const std::string& bytes);
  void close_connection();

  int fd_ = -1;
  std::unique_ptr<tls_client> tls_;  // HTTPS instead of fd_
  bool eof_ = false;
  bool chunked_ = false;
  // Chunked decoding state: bytes left in the current chunk, and the
  // partial size line (or CRLF) being read between chunks.
  std::size_t chunk_left_ = 0;
  bool in_chunk_ = false;
  bool after_chunk_ = false;
  std::string size_line_;
  core::sse_parser parser_;
  std::deque<core::sse_message> pending_;
};

}  // namespace tidings::testing
