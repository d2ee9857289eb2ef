#pragma once

// One SSE connection of the load client, on raw asio: the response header,
// chunked decoding and SSE framing are handled by hand so that a single
// thread can keep thousands of sessions busy. It understands exactly what
// its target sends ("\n"-terminated lines, frames ending in "\n\n") and the
// load payload {"t":<ns>,"i":<index>,"p":<publisher>,...}; anything else is a
// failure. tidingsd: chunked, `event: hello` first, cursors as ids. nchan:
// no chunking and no length (the body ends when the connection does), a
// ": hi" comment frame first, ids of its own ("<time>:<tag>").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "apps/tidings_load/chunked_decoder.hpp"
#include "apps/tidings_load/load_options.hpp"
#include "apps/tidings_load/tls_sessions.hpp"

namespace tidings::load {

struct delivery {
  std::string_view stream;  // the event's stream (valid during on_event); empty for nchan
  std::string_view cursor;  // the event's own cursor (valid during on_event); empty for nchan
  std::uint64_t seq = 0;    // its seq; 0 for nchan
  std::int64_t sent_ns = 0;
  std::int64_t index = 0;
  std::int64_t publisher = 0;
  std::int64_t received_ns = 0;  // when the read that carried the frame completed
};

class session_observer {
 public:
  // The target has taken the subscription (its first frame arrived).
  virtual void on_hello(std::size_t session) = 0;
  virtual void on_event(std::size_t session, const delivery& d) = 0;
  // Called at most once; the session is dead afterwards. `lost` when the
  // connection itself went (refused, reset, closed, or the node's
  // `closing`), not when the node said something wrong.
  virtual void on_failure(std::size_t session, const std::string& why, bool lost) = 0;

 protected:
  ~session_observer() = default;
};

std::int64_t steady_ns();

class sse_session {
 public:
  sse_session(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& server,
              const std::string& request, target peer, session_observer& observer, std::size_t id,
              std::size_t read_size, tls_sessions* tls = nullptr);
  sse_session(const sse_session&) = delete;
  sse_session& operator=(const sse_session&) = delete;

  void start();
  // The id of the last event received ("" before any): what a resume sends.
  const std::string& last_id() const { return last_id_; }
  // See session_pool::accept_any_payload.
  void accept_any_payload() { any_payload_ = true; }
  // Closes the socket; the pending read completes aborted and reports nothing.
  void close();

 private:
  void on_connected();
  void send_request();
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  bool take_header(std::string_view bytes);
  void take_body(const char* data, std::size_t size);
  void scan_frames(std::int64_t now_ns);
  void on_frame(std::string_view frame, std::int64_t now_ns);
  void fail(const std::string& why, bool lost = false);

  boost::asio::ip::tcp::socket socket_;
  tls_sessions* tls_sessions_;  // null: plain HTTP
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  boost::asio::ip::tcp::endpoint server_;
  const std::string& request_;
  target peer_;
  session_observer& observer_;
  std::size_t id_;
  std::vector<char> read_buf_;
  std::string head_;
  bool in_body_ = false;
  bool chunked_ = false;
  bool hello_ = false;
  bool any_payload_ = false;
  bool ended_ = false;  // the chunked body ended; its last frames still to read
  std::string last_id_;
  chunked_decoder dechunk_;
  std::string body_;
  bool done_ = false;  // failed or closed: report nothing more
};

}  // namespace tidings::load
