#include "broker/http_server.hpp"

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

#include "logging/log.hpp"
#include "relay/sse_session.hpp"

namespace tidings::broker {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

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

class http_connection : public std::enable_shared_from_this<http_connection> {
 public:
  http_connection(tcp::socket socket, relay::io_shard& shard, api& routes, const http_limits& limits,
                  const relay::sse_options& sse)
      : stream_(std::move(socket)),
        shard_(shard),
        routes_(routes),
        limits_(limits),
        sse_(sse),
        buffer_(limits.max_header_bytes + 4096) {}

  void start() { do_read(); }

 private:
  void do_read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->body_limit(limits_.max_body_bytes);
    stream_.expires_after(limits_.idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted)
      return close();
    if (ec) return reply(parse_error_response(ec, limits_), false);

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
    if (!parse_target(std::string_view(target.data(), target.size()), req.path, req.query))
      return reply(error_response(400, "malformed percent-encoding in the request target"), keep_alive_);

    auto result = routes_.handle(req, [self = shared_from_this()](http_response r) {
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
    auto session =
        std::make_shared<relay::sse_session>(shard_, stream_.release_socket(), std::move(request), sse_);
    session->start();
  }

  void reply(http_response r, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "tidings");
    res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive);
    res->prepare_payload();
    // HEAD: the headers of the GET, Content-Length included, and no body.
    if (head_) res->body().clear();
    stream_.expires_after(limits_.idle_timeout);
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
      if (ec || !res->keep_alive()) return self->close();
      self->do_read();
    });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  relay::io_shard& shard_;
  api& routes_;
  const http_limits& limits_;
  const relay::sse_options& sse_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  bool head_ = false;
};

}  // namespace

struct http_server::impl : std::enable_shared_from_this<http_server::impl> {
  impl(std::vector<std::shared_ptr<relay::io_shard>> s, api& r, http_limits l, const relay::sse_options& o)
      : shards(std::move(s)), routes(r), limits(l), sse(o), acceptor(shards.front()->context()) {}

  void accept() {
    auto& shard = *shards[next++ % shards.size()];
    // Weak: a pending accept left in a stopped context must not keep the
    // server (which holds the shards, which hold that context) alive.
    acceptor.async_accept(
        shard.context(), [weak = weak_from_this(), &shard](beast::error_code ec, tcp::socket socket) {
          auto self = weak.lock();
          if (!self || ec == net::error::operation_aborted || !self->acceptor.is_open()) return;
          if (!ec) {
            // The socket lives on `shard`'s context; start it there.
            net::post(shard.context(), [weak, &shard, socket = std::move(socket)]() mutable {
              if (auto server = weak.lock())
                std::make_shared<http_connection>(std::move(socket), shard, server->routes, server->limits,
                                                  server->sse)
                    ->start();
            });
          } else {
            // Out of descriptors or buffers: retrying at once would spin this
            // thread and starve its sessions, so wait a little first.
            logging::warn("http.accept_failed", {{"error", ec.message()}});
            self->retry.expires_after(std::chrono::milliseconds(100));
            self->retry.async_wait([weak](beast::error_code wait_ec) {
              auto again = weak.lock();
              if (again && !wait_ec && again->acceptor.is_open()) again->accept();
            });
            return;
          }
          self->accept();
        });
  }

  std::vector<std::shared_ptr<relay::io_shard>> shards;
  api& routes;
  http_limits limits;
  const relay::sse_options& sse;
  tcp::acceptor acceptor;
  net::steady_timer retry{acceptor.get_executor()};
  std::size_t next = 0;
};

http_server::http_server(std::vector<std::shared_ptr<relay::io_shard>> shards, api& routes,
                         http_limits limits, const relay::sse_options& sse)
    : impl_(std::make_shared<impl>(std::move(shards), routes, limits, sse)) {}

http_server::~http_server() = default;

std::optional<std::string> http_server::listen(const std::string& host, std::uint16_t port) {
  beast::error_code ec;
  auto address = net::ip::make_address(host, ec);
  if (ec) return "bad listen address '" + host + "': " + ec.message();
  tcp::endpoint ep{address, port};
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message();
  return std::nullopt;
}

std::uint16_t http_server::port() const {
  return impl_->acceptor.local_endpoint().port();
}

void http_server::start() {
  net::post(impl_->acceptor.get_executor(), [weak = std::weak_ptr<impl>(impl_)] {
    if (auto self = weak.lock()) self->accept();
  });
}

void http_server::stop_accepting() {
  net::post(impl_->acceptor.get_executor(), [weak = std::weak_ptr<impl>(impl_)] {
    if (auto self = weak.lock()) {
      beast::error_code ec;
      self->acceptor.close(ec);
    }
  });
}

}  // namespace tidings::broker
