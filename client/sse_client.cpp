#include "client/sse_client.hpp"

#include <array>
#include <deque>
#include <limits>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "client/stream_connect.hpp"

namespace tidings::client {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::size_t max_error_body = 1u << 20;
constexpr std::uint32_t max_response_header = 64u << 10;

}  // namespace

// The body is read with buffer_body so the parser de-chunks into `chunk`
// as bytes arrive, instead of waiting for the (endless) message to finish.
// A read that outlives next()'s timeout stays pending; the next call
// resumes waiting on it rather than starting another.
struct sse_stream::impl {
  endpoint ep;
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  core::sse_parser sse;
  std::deque<core::sse_message> pending;
  std::array<char, 16384> chunk{};

  int status = 0;
  std::string content_type;
  std::string error_body;
  std::string last_id;
  bool closed = false;
  bool paused = false;

  bool reading = false;
  bool read_done = false;
  beast::error_code read_ec;

  void start_read() {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    read_done = false;
    read_ec = {};
    reading = true;
    http::async_read_some(stream, buffer, parser, [this](beast::error_code ec, std::size_t) {
      read_done = true;
      read_ec = ec;
    });
  }

  // Takes the bytes the finished read produced; returns them for the caller to use.
  std::string_view finish_read() {
    reading = false;
    ioc.restart();
    const std::size_t got = chunk.size() - parser.get().body().size;
    if (read_ec && read_ec != http::error::need_buffer && read_ec != net::error::operation_aborted) {
      shut();
    } else if (parser.is_done()) {
      shut();
    }
    return {chunk.data(), got};
  }

  void shut() {
    closed = true;
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
  }

  void stop_pending_read(bool close_socket) {
    if (!reading) return;
    beast::error_code ignored;
    if (close_socket) {
      stream.socket().close(ignored);
    } else {
      stream.socket().cancel(ignored);
    }
    ioc.restart();
    while (!read_done && ioc.run_one() > 0) {
    }
  }

  // Runs the pending operation to its end; past `deadline`, closes the socket
  // so it ends at once, and throws `timeout_message`.
  void finish_or_throw(const bool& done, clock_type::time_point deadline,
                       const std::string& timeout_message) {
    if (!run_until(ioc, done, deadline)) {
      beast::error_code ignored;
      stream.socket().close(ignored);
      ioc.restart();
      while (!done && ioc.run_one() > 0) {
      }
      throw transport_error(timeout_message);
    }
    ioc.restart();
  }

  void feed(std::string_view bytes) {
    if (bytes.empty()) return;
    sse.feed(bytes, [this](core::sse_message&& m) { pending.push_back(std::move(m)); });
    // An oversized message means the stream is unusable from here on.
    if (sse.failed()) shut();
  }
};

sse_stream::sse_stream(const endpoint& ep, const std::string& target, const header_list& headers,
                       std::chrono::milliseconds timeout)
    : impl_(std::make_unique<impl>()) {
  auto& s = *impl_;
  s.ep = ep;
  const auto deadline = clock_type::now() + timeout;
  const std::string where = ep.host + ":" + std::to_string(ep.port);
  connect_stream(s.ioc, s.stream, ep, timeout);

  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, where);
  req.set(http::field::user_agent, "tidings-client");
  req.set(http::field::accept, "text/event-stream");
  req.set(http::field::cache_control, "no-cache");
  for (const auto& [name, value] : headers) req.set(name, value);

  bool done = false;
  beast::error_code ec;
  http::async_write(s.stream, req, [&](beast::error_code e, std::size_t) {
    done = true;
    ec = e;
  });
  s.finish_or_throw(done, deadline, "sending to " + where + " timed out");
  if (ec) throw transport_error("sending to " + where + " failed: " + ec.message());

  // The stream has no end, so the body must not be capped as a whole.
  // (Not boost::none: Beast 1.74 then refuses any Content-Length body.)
  s.parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  s.parser.header_limit(max_response_header);
  done = false;
  http::async_read_header(s.stream, s.buffer, s.parser, [&](beast::error_code e, std::size_t) {
    done = true;
    ec = e;
  });
  s.finish_or_throw(done, deadline, "waiting for the response header from " + where + " timed out");
  if (ec) throw transport_error("reading the response header from " + where + " failed: " + ec.message());

  const auto& head = s.parser.get();
  s.status = static_cast<int>(head.result_int());
  if (const auto it = head.find(http::field::content_type); it != head.end()) {
    s.content_type = std::string(it->value());
  }
  if (s.parser.is_done()) {
    s.shut();
    return;
  }
  if (s.status == 200) return;

  // An error reply: collect its (small) body within what is left of the timeout.
  while (!s.closed && s.error_body.size() < max_error_body) {
    s.start_read();
    if (!run_until(s.ioc, s.read_done, deadline)) {
      s.stop_pending_read(true);
      s.reading = false;
      break;
    }
    s.error_body.append(s.finish_read());
  }
  s.shut();
}

sse_stream::~sse_stream() {
  if (impl_) close();
}

int sse_stream::status() const {
  return impl_->status;
}
const std::string& sse_stream::content_type() const {
  return impl_->content_type;
}
const std::string& sse_stream::error_body() const {
  return impl_->error_body;
}
std::string sse_stream::last_event_id() const {
  return impl_->last_id;
}

sse_stream::result sse_stream::next(core::sse_message& out, std::chrono::milliseconds timeout) {
  auto& s = *impl_;
  const auto deadline = clock_type::now() + timeout;
  for (;;) {
    if (!s.pending.empty()) {
      out = std::move(s.pending.front());
      s.pending.pop_front();
      if (out.id) s.last_id = *out.id;
      return result::message;
    }
    if (s.closed) return result::closed;
    // Paused: nothing more will arrive through us, and waiting would only stall the caller.
    if (s.paused) return result::timeout;
    if (!s.reading) s.start_read();
    if (!run_until(s.ioc, s.read_done, deadline)) return result::timeout;
    s.feed(s.finish_read());
  }
}

void sse_stream::pause_reading() {
  auto& s = *impl_;
  if (s.paused || s.closed) return;
  s.paused = true;
  if (s.reading) {
    s.stop_pending_read(false);
    // The read may have completed with data before the cancel took effect.
    s.feed(s.finish_read());
  }
}

void sse_stream::close() {
  auto& s = *impl_;
  if (s.reading) {
    s.stop_pending_read(true);
    s.reading = false;
  }
  s.closed = true;
  beast::error_code ignored;
  s.stream.socket().close(ignored);
}

}  // namespace tidings::client
