#include "broker/http_server.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "logging/log.hpp"
#include "net/tls_server.hpp"
#include "relay/sse_session.hpp"
#include "relay/tls_connection.hpp"

namespace tidings::broker {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace ssl = net::ssl;

namespace {

// What a plain HTTP request sent to the HTTPS port gets, written in plain
// text where the handshake failed: a curl http:// at the wrong port learns why.
const std::string& plain_request_to_tls_port() {
  static const std::string reply = [] {
    const std::string body =
        R"json({"error":"this port serves HTTPS only: send the request as https:// (TLS 1.2+)"})json";
    return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  }();
  return reply;
}

// Bytes asked for by the read that waits for a request's first byte (the
// buffer, empty then, holds at least max_header_bytes + 4096).
constexpr std::size_t first_read_bytes = 4096;
// A refused connection's 429 is a few hundred bytes into an empty socket
// buffer; this only bounds a peer that never reads.
constexpr std::chrono::seconds refusal_write_deadline{1};
// Refusals come in floods: at most one log line per this interval.
constexpr std::chrono::seconds refusal_log_interval{1};

enum class refusal { none, node, address };

// Open connections per node and per client address. Counts are taken on the
// accepting thread and released on whichever I/O thread ends the connection
// (or the SSE session it became), hence the atomic and the mutex. Shared with
// every slot it hands out, since a slot can outlive the server.
class connection_table : public std::enable_shared_from_this<connection_table> {
 public:
  connection_table(std::size_t max_total, std::size_t max_per_address)
      : max_total_(max_total), max_per_address_(max_per_address) {}

  struct acquired {
    std::shared_ptr<const void> slot;  // releases the counts when the last copy goes
    refusal refused = refusal::none;
  };

  acquired acquire(const net::ip::address& address) {
    if (total_.fetch_add(1, std::memory_order_relaxed) >= max_total_) {
      total_.fetch_sub(1, std::memory_order_relaxed);
      return {nullptr, refusal::node};
    }
    {
      std::lock_guard lock(mutex_);
      auto& open = per_address_[address];
      if (open >= max_per_address_) {
        total_.fetch_sub(1, std::memory_order_relaxed);
        return {nullptr, refusal::address};
      }
      ++open;
    }
    return {std::make_shared<const slot>(shared_from_this(), address), refusal::none};
  }

  // Logs the first refusal, then at most one line per interval carrying how
  // many were refused since the last line: a flood must not flood the log.
  void note_refusal(refusal why, const net::ip::address& address) {
    std::uint64_t refused = 0;
    {
      std::lock_guard lock(log_mutex_);
      ++refused_since_log_;
      auto now = std::chrono::steady_clock::now();
      if (last_log_ && now - *last_log_ < refusal_log_interval) return;
      last_log_ = now;
      refused = std::exchange(refused_since_log_, 0);
    }
    bool node = why == refusal::node;
    logging::warn("http.connection_refused",
                  {{"reason", node ? "max_connections" : "max_connections_per_address"},
                   {"address", address.to_string()},
                   {"limit", static_cast<std::uint64_t>(node ? max_total_ : max_per_address_)},
                   {"refused", refused}});
  }

 private:
  class slot {
   public:
    slot(std::shared_ptr<connection_table> table, net::ip::address address)
        : table_(std::move(table)), address_(std::move(address)) {}
    ~slot() { table_->release(address_); }
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;

   private:
    std::shared_ptr<connection_table> table_;
    net::ip::address address_;
  };

  void release(const net::ip::address& address) {
    {
      std::lock_guard lock(mutex_);
      auto it = per_address_.find(address);
      if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
    }
    total_.fetch_sub(1, std::memory_order_relaxed);
  }

  const std::size_t max_total_;
  const std::size_t max_per_address_;
  std::atomic<std::size_t> total_{0};
  std::mutex mutex_;
  std::map<net::ip::address, std::size_t> per_address_;
  std::mutex log_mutex_;
  std::optional<std::chrono::steady_clock::time_point> last_log_;
  std::uint64_t refused_since_log_ = 0;
};

// The whole 429 a refused connection gets, serialized once.
std::shared_ptr<const std::string> refusal_reply(const std::string& message) {
  auto r = error_response(429, message);
  http::response<http::string_body> res{http::status::too_many_requests, 11};
  res.set(http::field::server, "tidings");
  res.set(http::field::content_type, r.content_type);
  res.set("X-Content-Type-Options", "nosniff");
  res.set(http::field::retry_after, "1");
  res.body() = std::move(r.body);
  res.keep_alive(false);
  res.prepare_payload();
  std::ostringstream out;
  out << res;
  return std::make_shared<const std::string>(std::move(out).str());
}

// Writes the prepared 429 and closes, reading nothing: the connection was
// never counted and costs the node only this one write.
void refuse(tcp::socket socket, const std::shared_ptr<const std::string>& reply) {
  auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
  stream->expires_after(refusal_write_deadline);
  net::async_write(*stream, net::buffer(*reply), [stream, reply](beast::error_code, std::size_t) {
    beast::error_code ec;
    stream->socket().shutdown(tcp::socket::shutdown_send, ec);
    stream->close();
  });
}

// The peer went away or a deadline passed: nothing left to answer.
bool is_disconnect(const beast::error_code& ec) {
  // (An HTTPS client that closes without a close_notify: stream_truncated.)
  return ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
         ec == net::error::connection_reset || ec == net::error::operation_aborted ||
         ec == net::ssl::error::stream_truncated;
}

// Maps a Beast parse failure to the status the client should see.
http_response parse_error_response(const beast::error_code& ec, const http_limits& limits) {
  if (ec == http::error::body_limit)
    return error_response(413, "body over the limit of " + std::to_string(limits.max_body_bytes) + " bytes");
  // The read buffer is sized to the header limit, so an over-long request
  // line or header block can also end as a buffer overflow.
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
    return error_response(
        431, "header block over the limit of " + std::to_string(limits.max_header_bytes) + " bytes");
  return error_response(400, "malformed HTTP request: " + ec.message());
}

// One connection's request loop. Each request is read in three phases, each
// under its own deadline:
//
//   do_read --(first byte, idle_timeout)--> read_header --(header block,
//   header_timeout)--> on_header --(body, idle_timeout)--> on_request
//      ^                                                        |
//      +------------- reply written, keep-alive -----------------+
//
// A pipelined request already in the buffer skips the first phase. On the
// HTTPS port a handshake comes first, under the header deadline.
template <class Stream>
class http_connection : public std::enable_shared_from_this<http_connection<Stream>> {
  static constexpr bool tls = std::is_same_v<Stream, relay::tls_socket>;

 public:
  // `tls_context` is the HTTPS port's (null for plain HTTP); the connection
  // keeps it, whatever a reload installs meanwhile.
  http_connection(tcp::socket socket, std::shared_ptr<ssl::context> tls_context,
                  std::shared_ptr<const void> slot, relay::io_shard& shard, api& routes,
                  const http_limits& limits, const relay::sse_options& sse)
      : stream_(make_stream(std::move(socket), std::move(tls_context))),
        slot_(std::move(slot)),
        shard_(shard),
        routes_(routes),
        limits_(limits),
        sse_(sse),
        buffer_(limits.max_header_bytes + 4096) {}

  void start() {
    if constexpr (tls) {
      stream_.expires_after(limits_.header_timeout);
      stream_.async_handshake(
          [self = this->shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
    } else {
      do_read();
    }
  }

 private:
  static Stream make_stream(tcp::socket socket, std::shared_ptr<ssl::context> ctx) {
    if constexpr (tls)
      return Stream(std::move(socket), std::move(ctx));
    else
      return Stream(std::move(socket));
  }

  // The TCP socket under either stream.
  tcp::socket& raw_socket() { return stream_.socket(); }

  void on_handshake(beast::error_code ec) {
    if (!ec) return do_read();
    // Plain HTTP at the HTTPS port: OpenSSL has read only the request line
    // (it knows GET, POST, HEAD and PUT; other methods end as any bad handshake).
    const auto code = static_cast<unsigned long>(ec.value());
    if (ec.category() == net::error::get_ssl_category() && ERR_GET_LIB(code) == ERR_LIB_SSL &&
        ERR_GET_REASON(code) == SSL_R_HTTP_REQUEST) {
      stream_.expires_after(refusal_write_deadline);
      return net::async_write(
          raw_socket(), net::buffer(plain_request_to_tls_port()),
          [self = this->shared_from_this()](beast::error_code, std::size_t) { self->close(); });
    }
    // Scanners and clients that distrust the certificate end here: one debug
    // line each, never a warning a flood could multiply.
    if (!is_disconnect(ec)) logging::debug("http.tls_handshake_failed", {{"error", ec.message()}});
    close();
  }

  void do_read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->body_limit(limits_.max_body_bytes);
    // The next request has begun arriving already: its header clock runs now.
    if (buffer_.size() > 0) return read_header();
    stream_.expires_after(limits_.idle_timeout);
    stream_.async_read_some(buffer_.prepare(first_read_bytes),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->on_first_bytes(ec, n);
                            });
  }

  void on_first_bytes(beast::error_code ec, std::size_t n) {
    if (ec) return close();
    buffer_.commit(n);
    read_header();
  }

  void read_header() {
    stream_.expires_after(limits_.header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (is_disconnect(ec)) return close();
    if (ec) return reply(parse_error_response(ec, limits_), false);
    auto& msg = parser_->get();
    if (static_cast<std::size_t>(std::distance(msg.begin(), msg.end())) > limits_.max_header_count)
      return reply(error_response(431, "header block over the limit of " +
                                           std::to_string(limits_.max_header_count) + " fields"),
                   false);
    if (parser_->is_done()) return on_request();
    stream_.expires_after(limits_.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (is_disconnect(ec)) return close();
    if (ec) return reply(parse_error_response(ec, limits_), false);
    on_request();
  }

  void on_request() {
    auto& msg = parser_->get();
    http_request req;
    req.method = std::string(msg.method_string());
    for (auto& field : msg) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      req.headers[name] = std::string(field.value());
    }
    req.body = std::move(msg.body());
    keep_alive_ = msg.keep_alive();
    head_ = msg.method() == http::verb::head;
    // Only "chunked" (or nothing) frames a request body here. Anything else
    // would leave the body to be read as the next request: refuse and close.
    if (auto te = msg.find(http::field::transfer_encoding); te != msg.end()) {
      auto value = te->value();
      if (!beast::iequals(value, "chunked"))
        return reply(error_response(501, "Transfer-Encoding other than chunked is not supported"), false);
    }
    auto target = msg.target();
    switch (parse_target(std::string_view(target.data(), target.size()), req.path, req.query)) {
      case target_check::ok:
        break;
      case target_check::malformed:
        return reply(error_response(400, "malformed percent-encoding in the request target"), keep_alive_);
      case target_check::encoded_slash:
        return reply(error_response(400,
                                    "the path holds an encoded '/' (%2F), which no route or stream name "
                                    "has; routes are matched on '/' as written"),
                     keep_alive_);
    }

    auto result = routes_.handle(req, [self = this->shared_from_this()](http_response r) {
      net::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable {
        if (r.sse) return self->upgrade(std::move(*r.sse));
        self->reply(std::move(r), self->keep_alive_);
      });
    });
    if (result.response) return reply(std::move(*result.response), keep_alive_);
    if (result.sse) upgrade(std::move(*result.sse));
  }

  void upgrade(relay::sse_request request) {
    // The connection now belongs to the SSE session for good.
    stream_.expires_never();
    // The session keeps the connection's place in the counts.
    request.holds.push_back(std::move(slot_));
    std::shared_ptr<relay::sse_session> session;
    if constexpr (tls)
      session = std::make_shared<relay::sse_session>(
          shard_, std::make_unique<relay::tls_connection>(std::move(stream_)), std::move(request), sse_);
    else
      session =
          std::make_shared<relay::sse_session>(shard_, stream_.release_socket(), std::move(request), sse_);
    session->start();
  }

  void reply(http_response r, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "tidings");
    res->set(http::field::content_type, r.content_type);
    // Never let a browser read a JSON error (which may echo input) as HTML.
    res->set("X-Content-Type-Options", "nosniff");
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive);
    auto after_sent = std::move(r.after_sent);
    res->prepare_payload();
    // A 304 may carry no Content-Length but the 200's (RFC 9110 8.6).
    if (r.status == 304) res->erase(http::field::content_length);
    // HEAD: the headers of the GET, Content-Length included, and no body.
    if (head_) res->body().clear();
    stream_.expires_after(limits_.idle_timeout);
    http::async_write(stream_, *res,
                      [self = this->shared_from_this(), res, after_sent = std::move(after_sent)](
                          beast::error_code ec, std::size_t) {
                        if (after_sent) after_sent();
                        if (ec || !res->keep_alive()) return self->close();
                        self->do_read();
                      });
  }

  // Under TLS without a close_notify: every reply was framed by its length
  // or chunks, so a client cannot mistake the end for a truncation.
  void close() {
    beast::error_code ec;
    raw_socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  Stream stream_;
  std::shared_ptr<const void> slot_;  // this connection's place in the counts
  relay::io_shard& shard_;
  api& routes_;
  const http_limits& limits_;
  const relay::sse_options& sse_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  bool head_ = false;
};

// One listening port: plain HTTP, or HTTPS with the keys it accepts with.
struct listener {
  explicit listener(net::io_context& ioc) : acceptor(ioc), retry(ioc) {}
  tcp::acceptor acceptor;
  std::shared_ptr<tidings::net::tls_server_keys> keys;  // null: plain HTTP
  net::steady_timer retry;
};

std::optional<std::string> bind(tcp::acceptor& a, const std::string& host, std::uint16_t port) {
  beast::error_code ec;
  auto address = net::ip::make_address(host, ec);
  if (ec) return "bad listen address '" + host + "': " + ec.message();
  tcp::endpoint ep{address, port};
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message();
  return std::nullopt;
}

}  // namespace

struct http_server::impl : std::enable_shared_from_this<http_server::impl> {
  impl(std::vector<std::shared_ptr<relay::io_shard>> s, api& r, http_limits l, const relay::sse_options& o)
      : shards(std::move(s)),
        routes(r),
        limits(l),
        sse(o),
        plain(shards.front()->context()),
        secure(shards.front()->context()),
        connections(std::make_shared<connection_table>(l.max_connections, l.max_connections_per_address)),
        node_full(refusal_reply("too many connections on this node (limit " +
                                std::to_string(l.max_connections) + ")")),
        address_full(refusal_reply("too many connections from this address (limit " +
                                   std::to_string(l.max_connections_per_address) + ")")) {}

  // Runs on the accepting thread; the connection then lives on `shard`.
  // Both ports share the counts: a client's HTTPS connections are its
  // connections too.
  void admit(tcp::socket socket, relay::io_shard& shard, std::shared_ptr<ssl::context> tls_context) {
    beast::error_code ec;
    auto peer = socket.remote_endpoint(ec);
    if (ec) return;  // gone already: dropping the socket closes it
    auto taken = connections->acquire(peer.address());
    if (taken.refused != refusal::none) {
      connections->note_refusal(taken.refused, peer.address());
      // A refusal on the HTTPS port is not answered: the 429 would need a
      // handshake, which is the work being refused.
      if (tls_context) return;
      auto reply = taken.refused == refusal::node ? node_full : address_full;
      net::post(shard.context(),
                [socket = std::move(socket), reply]() mutable { refuse(std::move(socket), reply); });
      return;
    }
    // Weak: a connection posted to a stopped context must not keep the
    // server alive.
    net::post(shard.context(), [weak = weak_from_this(), &shard, socket = std::move(socket),
                                tls_context = std::move(tls_context),
                                slot = std::move(taken.slot)]() mutable {
      auto server = weak.lock();
      if (!server) return;
      if (tls_context)
        std::make_shared<http_connection<relay::tls_socket>>(std::move(socket), std::move(tls_context),
                                                             std::move(slot), shard, server->routes,
                                                             server->limits, server->sse)
            ->start();
      else
        std::make_shared<http_connection<beast::tcp_stream>>(
            std::move(socket), nullptr, std::move(slot), shard, server->routes, server->limits, server->sse)
            ->start();
    });
  }

  void accept(listener& l) {
    auto& shard = *shards[next++ % shards.size()];
    // Weak: a pending accept left in a stopped context must not keep the
    // server (which holds the shards, which hold that context) alive.
    l.acceptor.async_accept(shard.context(),
                            [weak = weak_from_this(), &l, &shard](beast::error_code ec, tcp::socket socket) {
                              if (auto self = weak.lock()) self->on_accept(l, ec, std::move(socket), shard);
                            });
  }

  void on_accept(listener& l, beast::error_code ec, tcp::socket socket, relay::io_shard& shard) {
    if (ec == net::error::operation_aborted || !l.acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors or buffers: retrying at once would spin this
      // thread and starve its sessions, so wait a little first.
      logging::warn("http.accept_failed", {{"error", ec.message()}});
      l.retry.expires_after(std::chrono::milliseconds(100));
      l.retry.async_wait([weak = weak_from_this(), &l](beast::error_code wait_ec) {
        auto again = weak.lock();
        if (again && !wait_ec && l.acceptor.is_open()) again->accept(l);
      });
      return;
    }
    // The context current now: a reload since the last accept takes effect here.
    admit(std::move(socket), shard, l.keys ? l.keys->current() : nullptr);
    accept(l);
  }

  std::vector<std::shared_ptr<relay::io_shard>> shards;
  api& routes;
  http_limits limits;
  const relay::sse_options& sse;
  listener plain;
  listener secure;  // open only with listen_tls
  std::shared_ptr<connection_table> connections;
  std::shared_ptr<const std::string> node_full;     // the 429 past max_connections
  std::shared_ptr<const std::string> address_full;  // the 429 past max_connections_per_address
  std::size_t next = 0;
};

http_server::http_server(std::vector<std::shared_ptr<relay::io_shard>> shards, api& routes,
                         http_limits limits, const relay::sse_options& sse)
    : impl_(std::make_shared<impl>(std::move(shards), routes, limits, sse)) {}

http_server::~http_server() = default;

std::optional<std::string> http_server::listen(const std::string& host, std::uint16_t port) {
  return bind(impl_->plain.acceptor, host, port);
}

std::optional<std::string> http_server::listen_tls(const std::string& host, std::uint16_t port,
                                                   std::shared_ptr<tidings::net::tls_server_keys> keys) {
  impl_->secure.keys = std::move(keys);
  return bind(impl_->secure.acceptor, host, port);
}

std::uint16_t http_server::port() const {
  return impl_->plain.acceptor.local_endpoint().port();
}

std::uint16_t http_server::tls_port() const {
  beast::error_code ec;
  auto ep = impl_->secure.acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void http_server::start() {
  net::post(impl_->plain.acceptor.get_executor(), [weak = std::weak_ptr<impl>(impl_)] {
    auto self = weak.lock();
    if (!self) return;
    self->accept(self->plain);
    if (self->secure.acceptor.is_open()) self->accept(self->secure);
  });
}

void http_server::stop_accepting() {
  net::post(impl_->plain.acceptor.get_executor(), [weak = std::weak_ptr<impl>(impl_)] {
    if (auto self = weak.lock()) {
      beast::error_code ec;
      self->plain.acceptor.close(ec);
      self->secure.acceptor.close(ec);
    }
  });
}

}  // namespace tidings::broker
