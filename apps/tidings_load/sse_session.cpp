#include "apps/tidings_load/sse_session.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>

#include <boost/asio/write.hpp>

namespace tidings::load {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// A frame larger than this is not one of ours.
constexpr std::size_t max_pending_body = 1u << 20;
constexpr std::size_t max_header = 16u << 10;

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// The integer after `"key":` (optional spaces), searching from `from`, or
// false. Searches start where the caller knows the key cannot be earlier:
// scanning the whole line for every key was most of the tool's CPU.
bool find_int(std::string_view text, std::string_view key, std::int64_t& out, std::size_t from = 0) {
  const auto at = text.find(key, from);
  if (at == std::string_view::npos) return false;
  std::size_t i = at + key.size();
  while (i < text.size() && text[i] == ' ') ++i;
  const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + text.size(), out);
  return ec == std::errc() && ptr != text.data() + i;
}

// The string after `"key":"` up to the next quote (names and cursors have
// no escapes), searching from `from`; empty when absent. `end` is set past
// its closing quote.
std::string_view find_string(std::string_view text, std::string_view key, std::size_t from,
                             std::size_t& end) {
  const auto at = text.find(key, from);
  if (at == std::string_view::npos) return {};
  const auto start = at + key.size();
  const auto close = text.find('"', start);
  if (close == std::string_view::npos) return {};
  end = close + 1;
  return text.substr(start, close - start);
}

// hello's heads, {"streams":{"a":"E:N","b":"E:M"},...}, as the id vector
// "E:N,E:M" (in connection order, as the node writes them), or empty.
std::string heads_of_hello(std::string_view data) {
  const auto open = data.find("\"streams\":{");
  if (open == std::string_view::npos) return {};
  const auto close = data.find('}', open);
  std::string out;
  for (auto at = data.find("\":\"", open); at != std::string_view::npos && at < close;
       at = data.find("\":\"", at)) {
    const auto start = at + 3;
    const auto end = data.find('"', start);
    if (end == std::string_view::npos || end > close) break;
    if (!out.empty()) out += ',';
    out.append(data.substr(start, end - start));
    at = end;
  }
  return out;
}

}  // namespace

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

sse_session::sse_session(net::io_context& ioc, const tcp::endpoint& server, const std::string& request,
                         target peer, session_observer& observer, std::size_t id, std::size_t read_size,
                         tls_sessions* tls)
    : socket_(ioc),
      tls_sessions_(tls),
      server_(server),
      request_(request),
      peer_(peer),
      observer_(observer),
      id_(id),
      read_buf_(read_size) {}

void sse_session::start() {
  socket_.async_connect(server_, [this](const boost::system::error_code& ec) {
    if (done_) return;
    if (ec) return fail("connect: " + ec.message(), true);
    on_connected();
  });
}

void sse_session::on_connected() {
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  if (!tls_sessions_) return send_request();
  tls_.emplace(socket_, tls_sessions_->context());
  tls_sessions_->prepare(id_, tls_->native_handle());
  tls_->async_handshake(net::ssl::stream_base::client, [this](const boost::system::error_code& ec) {
    if (done_) return;
    if (ec) return fail("TLS handshake: " + ec.message(), true);
    send_request();
  });
}

void sse_session::send_request() {
  auto sent = [this](const boost::system::error_code& ec, std::size_t) {
    if (done_) return;
    if (ec) return fail("send request: " + ec.message(), true);
    do_read();
  };
  if (tls_)
    net::async_write(*tls_, net::buffer(request_), sent);
  else
    net::async_write(socket_, net::buffer(request_), sent);
}

void sse_session::close() {
  done_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void sse_session::fail(const std::string& why, bool lost) {
  if (done_) return;
  done_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  observer_.on_failure(id_, why, lost);
}

void sse_session::do_read() {
  auto done = [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); };
  if (tls_)
    tls_->async_read_some(net::buffer(read_buf_), done);
  else
    socket_.async_read_some(net::buffer(read_buf_), done);
}

void sse_session::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (done_) return;
  if (ec) {
    return fail(
        ec == net::error::eof ? std::string("connection closed by the server") : "read: " + ec.message(),
        true);
  }
  std::string_view bytes(read_buf_.data(), n);
  if (!in_body_) {
    const auto before = head_.size();
    head_.append(bytes);
    const auto end = head_.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (head_.size() > max_header) return fail("response header too large");
      return do_read();
    }
    bytes = bytes.substr(end + 4 - before);
    head_.resize(end + 4);
    if (!take_header(head_)) return;
    in_body_ = true;
  }
  take_body(bytes.data(), bytes.size());
  if (done_) return;
  scan_frames(steady_ns());
  if (!done_ && ended_) return fail("the server ended the event stream", true);
  if (!done_) do_read();
}

bool sse_session::take_header(std::string_view head) {
  // "HTTP/1.1 200 OK"
  const auto sp = head.find(' ');
  if (sp == std::string_view::npos || !starts_with(head.substr(sp + 1), "200")) {
    const auto line_end = head.find("\r\n");
    fail("response " + std::string(head.substr(0, line_end)));
    return false;
  }
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  chunked_ = lower.find("transfer-encoding: chunked") != std::string::npos;
  head_.clear();
  head_.shrink_to_fit();
  return true;
}

void sse_session::take_body(const char* data, std::size_t size) {
  if (!chunked_) {
    body_.append(data, size);
    return;
  }
  switch (dechunk_.feed(data, size, body_)) {
    case chunked_decoder::status::more:
      break;
    case chunked_decoder::status::done:
      // The frames before the end (a resync, say) are read first: they
      // say why it ended.
      ended_ = true;
      break;
    case chunked_decoder::status::error:
      fail("bad chunked encoding");
      break;
  }
}

void sse_session::scan_frames(std::int64_t now_ns) {
  std::size_t start = 0;
  for (;;) {
    const auto end = body_.find("\n\n", start);
    if (end == std::string::npos) break;
    on_frame(std::string_view(body_).substr(start, end + 1 - start), now_ns);
    if (done_) return;
    start = end + 2;
  }
  body_.erase(0, start);
  if (body_.size() > max_pending_body) fail("an SSE frame over 1 MiB");
}

void sse_session::on_frame(std::string_view frame, std::int64_t now_ns) {
  std::string_view event, id, data;
  bool comment = false;
  std::size_t pos = 0;
  while (pos < frame.size()) {
    const auto nl = frame.find('\n', pos);
    const auto line = frame.substr(pos, nl - pos);
    pos = nl + 1;
    if (starts_with(line, "data: ")) {
      data = line.substr(6);  // our payloads are one line
    } else if (starts_with(line, "id: ")) {
      id = line.substr(4);
    } else if (starts_with(line, "event: ")) {
      event = line.substr(7);
    } else if (starts_with(line, ":")) {
      comment = true;
    }
  }
  if (!event.empty()) {
    if (peer_ == target::tidings && event == "hello") {
      hello_ = true;
      // Where a resume goes before any event arrived: the heads at subscribe.
      if (last_id_.empty()) last_id_ = heads_of_hello(data);
      if (tls_) tls_sessions_->established(id_, tls_->native_handle());
      return observer_.on_hello(id_);
    }
    if (event == "heartbeat") return;
    return fail(std::string(event) + ": " + std::string(data), event == "closing");
  }
  if (data.empty()) {
    // nchan's first frame is a lone comment; it has registered the
    // subscriber by then, so it is what tidingsd's hello is.
    if (peer_ == target::nchan && comment && !hello_) {
      hello_ = true;
      observer_.on_hello(id_);
    }
    return;  // "retry:" and comments
  }
  if (!hello_) return fail("an event before the subscription was confirmed");

  delivery d;
  d.received_ns = now_ns;
  bool id_ok = !id.empty();
  // Where our payload starts: nchan sends it as the whole line, Tidings
  // inside its envelope, after the stream and cursor.
  std::size_t payload = 0;
  if (peer_ == target::tidings) {
    // The event's own stream and cursor: the id holds every stream's
    // cursor when the session reads several.
    std::size_t after_stream = 0;
    d.stream = find_string(data, "\"stream\":\"", 0, after_stream);
    const auto cursor = find_string(data, "\"cursor\":\"", after_stream, payload);
    const auto colon = cursor.rfind(':');
    std::int64_t seq = 0;
    id_ok =
        !id.empty() && !d.stream.empty() && colon != std::string_view::npos &&
        std::from_chars(cursor.data() + colon + 1, cursor.data() + cursor.size(), seq).ec == std::errc() &&
        seq > 0;
    d.seq = static_cast<std::uint64_t>(seq);
    d.cursor = cursor;
    // The envelope's "data" object is our payload (the load tool's paths
    // never hold that text).
    if (const auto at = data.find("\"data\":{", payload); at != std::string_view::npos) payload = at + 7;
  }
  if (id_ok) last_id_.assign(id);
  if (id_ok && any_payload_) return observer_.on_event(id_, d);
  if (!id_ok || !find_int(data, "\"t\":", d.sent_ns, payload) ||
      !find_int(data, "\"i\":", d.index, payload) || !find_int(data, "\"p\":", d.publisher, payload)) {
    return fail("unexpected event: " + std::string(frame.substr(0, 200)));
  }
  observer_.on_event(id_, d);
}

}  // namespace tidings::load
