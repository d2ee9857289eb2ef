#include "net/http_client.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace tidings::net {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

const std::string& http_response::header(std::string_view name) const {
  static const std::string none;
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return none;
}

bool parse_http_url(std::string_view url, http_url* out, std::string* error) {
  auto fail = [error](std::string message) {
    if (error) *error = std::move(message);
    return false;
  };
  auto lower_prefix = [url](std::string_view prefix) {
    if (url.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(url[i])) != prefix[i]) return false;
    return true;
  };
  const bool tls = lower_prefix("https://");
  if (!tls && !lower_prefix("http://")) return fail("not an http:// or https:// URL");
  std::string_view rest = url.substr(tls ? 8 : 7);
  const auto slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  std::string target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (const auto hash = target.find('#'); hash != std::string::npos) target.erase(hash);
  if (target.empty() || target[0] == '?') target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos) return fail("user info in URLs is not supported");
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("unterminated IPv6 address");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return fail("junk after IPv6 address");
      port = after.substr(1);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return fail("no host");
  if (port.empty()) port = tls ? "443" : "80";
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(std::string(port)) > 65535 || std::stoi(std::string(port)) == 0)
    return fail("bad port");
  out->tls = tls;
  out->host = std::string(host);
  out->port = std::string(port);
  out->target = std::move(target);
  return true;
}

namespace {

constexpr std::size_t header_limit = std::size_t{64} * 1024;
constexpr std::size_t read_buffer_limit = header_limit + std::size_t{64} * 1024;
constexpr std::size_t stream_piece = std::size_t{16} * 1024;

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <class Message>
void copy_head(const Message& m, http_response* out) {
  out->status = static_cast<int>(m.result_int());
  out->headers.clear();
  for (const auto& field : m) {
    const auto name = field.name_string();
    const auto value = field.value();
    out->headers.emplace_back(lowercase(std::string_view(name.data(), name.size())),
                              std::string(value.data(), value.size()));
  }
}

// One request on its own connection, one-shot or streamed. Every async step
// holds a shared_ptr to it, so it outlives the caller's reference while work
// is pending. After cancel() or the final callback, `finished_` makes every
// later completion a no-op; the callbacks themselves are only released from
// completions (never from inside a user callback, which may be running).
class http_operation : public http_call, public std::enable_shared_from_this<http_operation> {
 public:
  http_operation(asio::io_context& ioc, http_request req, std::function<void(http_result)> done)
      : ioc_(ioc), req_(std::move(req)), done_(std::move(done)) {}
  http_operation(asio::io_context& ioc, http_request req, http_stream_handlers handlers)
      : ioc_(ioc), req_(std::move(req)), stream_(std::move(handlers)), streaming_(true) {}

  void start() {
    http_url url;
    std::string error;
    if (!parse_http_url(req_.url, &url, &error)) {
      // Callbacks never run inside http_fetch / http_open_stream.
      asio::post(ioc_, [self = shared_from_this(), error] { self->fail(error); });
      return;
    }
    authority_ = url.host + ":" + url.port;
    if (!build_request(url, &error) || (url.tls && !start_tls(url.host, &error))) {
      asio::post(ioc_, [self = shared_from_this(), error] { self->fail(error); });
      return;
    }
    arm_timer(req_.timeout, "timed out after " + std::to_string(req_.timeout.count()) + " ms");
    resolver_.async_resolve(
        url.host, url.port,
        [self = shared_from_this()](const error_code& ec, const tcp::resolver::results_type& r) {
          self->on_resolve(ec, r);
        });
  }

  void cancel() override {
    if (finished_) return;
    finished_ = true;
    shut_down();
  }

 private:
  bool build_request(const http_url& url, std::string* error) {
    const auto verb = http::string_to_verb(req_.method);
    if (verb == http::verb::unknown) {
      *error = "unknown HTTP method " + req_.method;
      return false;
    }
    request_.method(verb);
    request_.target(url.target);
    request_.version(11);
    const bool v6 = url.host.find(':') != std::string::npos;
    std::string host = v6 ? "[" + url.host + "]" : url.host;
    if (url.port != (url.tls ? "443" : "80")) host += ":" + url.port;
    request_.set(http::field::host, host);
    request_.set(http::field::user_agent, "tidings");
    for (const auto& [k, v] : req_.headers) request_.insert(k, v);
    request_.body() = std::move(req_.body);
    if (!request_.body().empty() || verb == http::verb::post || verb == http::verb::put ||
        verb == http::verb::patch)
      request_.prepare_payload();
    return true;
  }

  // The TLS layer over the socket, told whom it must be talking to: the
  // certificate must name `host` (a DNS name or an IP address), and SNI
  // carries a name (never an address, RFC 6066).
  bool start_tls(const std::string& host, std::string* error) {
    auto context = req_.tls ? req_.tls : default_tls_client_context();
    tls_.emplace(socket_, *context);
    tls_context_ = std::move(context);
    SSL* ssl = tls_->native_handle();
    error_code not_address;
    asio::ip::make_address(host, not_address);
    const bool address = !not_address;
    const bool named = address ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1
                               : SSL_set1_host(ssl, host.c_str()) == 1 &&
                                     SSL_set_tlsext_host_name(ssl, const_cast<char*>(host.c_str())) == 1;
    if (!named) *error = "TLS to " + authority_ + ": cannot verify the host name " + host;
    return named;
  }

  void on_resolve(const error_code& ec, const tcp::resolver::results_type& results) {
    if (finished_) return release();
    if (ec) return fail(describe("resolve " + authority_, ec));
    asio::async_connect(
        socket_, results,
        [self = shared_from_this()](const error_code& e, const tcp::endpoint&) { self->on_connect(e); });
  }

  void on_connect(const error_code& ec) {
    if (finished_) return release();
    if (ec) return fail(describe("connect " + authority_, ec));
    if (!tls_) return send();
    tls_->async_handshake(asio::ssl::stream_base::client,
                          [self = shared_from_this()](const error_code& e) { self->on_handshake(e); });
  }

  void on_handshake(const error_code& ec) {
    if (finished_) return release();
    if (ec && timed_out_) return fail(describe("TLS handshake with " + authority_, ec));
    if (!ec) return send();
    SSL* ssl = tls_->native_handle();
    // Unverified (insecure_skip_verify), OpenSSL still records the verdict it ignored.
    fail(tls_failure(SSL_get_verify_mode(ssl) == SSL_VERIFY_NONE ? X509_V_OK : SSL_get_verify_result(ssl),
                     ec));
  }

  // Every read and write goes through the TLS layer when there is one.
  template <class Step>
  void on_stream(Step&& step) {
    if (tls_)
      step(*tls_);
    else
      step(socket_);
  }

  void send() {
    on_stream([this](auto& stream) {
      http::async_write(stream, request_,
                        [self = shared_from_this()](const error_code& e, std::size_t) { self->on_write(e); });
    });
  }

  void on_write(const error_code& ec) {
    if (finished_) return release();
    if (ec) return fail(describe("send to " + authority_, ec));
    if (streaming_) {
      stream_parser_.emplace();
      stream_parser_->header_limit(header_limit);
      // Not boost::none: Beast 1.74 compares a Content-Length against an empty
      // optional as "too large".
      stream_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
      on_stream([this](auto& stream) {
        http::async_read_header(
            stream, buffer_, *stream_parser_,
            [self = shared_from_this()](const error_code& e, std::size_t) { self->on_stream_head(e); });
      });
    } else {
      parser_.emplace();
      parser_->header_limit(header_limit);
      parser_->body_limit(req_.max_body_bytes);
      on_stream([this](auto& stream) {
        http::async_read_header(
            stream, buffer_, *parser_,
            [self = shared_from_this()](const error_code& e, std::size_t) { self->on_response_head(e); });
      });
    }
  }

  void on_response_head(const error_code& ec) {
    if (finished_) return release();
    if (ec) return on_response(ec);
    head_seen_ = true;
    // Beast 1.74 does not apply body_limit to a Content-Length body.
    if (const auto length = parser_->content_length(); length && *length > req_.max_body_bytes)
      return on_response(http::error::body_limit);
    on_stream([this](auto& stream) {
      http::async_read(
          stream, buffer_, *parser_,
          [self = shared_from_this()](const error_code& e, std::size_t) { self->on_response(e); });
    });
  }

  void on_response(const error_code& ec) {
    if (finished_) return release();
    if (ec == http::error::body_limit)
      return fail("response body from " + authority_ + " exceeds " + std::to_string(req_.max_body_bytes) +
                  " bytes");
    if (ec) return fail(describe("read from " + authority_, ec));
    http_result result;
    copy_head(parser_->get(), &result.response);
    result.response.body = std::move(parser_->get().body());
    finished_ = true;
    shut_down();
    auto done = std::move(done_);
    done_ = nullptr;
    done(std::move(result));
  }

  void on_stream_head(const error_code& ec) {
    if (finished_) return release();
    if (ec) return fail(describe("read from " + authority_, ec));
    head_seen_ = true;
    http_response head;
    copy_head(stream_parser_->get(), &head);
    arm_timer(req_.idle_timeout, "no data for " + std::to_string(req_.idle_timeout.count()) + " ms");
    if (stream_.head) stream_.head(head);
    if (finished_) return;  // cancelled from the head callback
    read_piece();
  }

  void read_piece() {
    if (stream_parser_->is_done()) return end_stream("");
    auto& body = stream_parser_->get().body();
    body.data = piece_.data();
    body.size = piece_.size();
    body.more = true;
    on_stream([this](auto& stream) {
      http::async_read_some(
          stream, buffer_, *stream_parser_,
          [self = shared_from_this()](const error_code& e, std::size_t) { self->on_piece(e); });
    });
  }

  void on_piece(error_code ec) {
    if (finished_) return release();
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t n = piece_.size() - stream_parser_->get().body().size;
    if (n > 0) {
      arm_timer(req_.idle_timeout, "no data for " + std::to_string(req_.idle_timeout.count()) + " ms");
      if (stream_.data) stream_.data(std::string_view(piece_.data(), n));
      if (finished_) return;  // cancelled from the data callback
    }
    if (ec) return end_stream(describe("stream from " + authority_, ec));
    read_piece();
  }

  void end_stream(std::string error) {
    finished_ = true;
    shut_down();
    auto end = std::move(stream_.end);
    stream_ = {};
    if (end) end(std::move(error));
  }

  void fail(std::string error) {
    if (finished_) return release();
    if (streaming_) return end_stream(std::move(error));
    finished_ = true;
    shut_down();
    auto done = std::move(done_);
    done_ = nullptr;
    http_result result;
    result.error = std::move(error);
    if (done) done(std::move(result));
  }

  // A zero duration disarms the timer.
  void arm_timer(std::chrono::milliseconds d, std::string message) {
    ++timer_generation_;
    timer_.cancel();
    if (d.count() <= 0) return;
    timer_message_ = std::move(message);
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this(), generation = timer_generation_](const error_code& ec) {
      self->on_timer(ec, generation);
    });
  }

  void on_timer(const error_code& ec, std::uint64_t generation) {
    if (ec || generation != timer_generation_ || finished_) return;
    timed_out_ = true;
    // Closing makes the pending operation complete with an error, which fail()
    // turns into the timeout message.
    error_code ignored;
    resolver_.cancel();
    socket_.close(ignored);
  }

  std::string describe(const std::string& what, const error_code& ec) const {
    if (timed_out_) return what + ": " + timer_message_;
    // A TLS 1.3 server refuses a client certificate (or its absence) after
    // the client's side of the handshake is done: its alert ends the first read.
    if (tls_ && !head_seen_ && peer_alert(ec)) return tls_failure(X509_V_OK, ec);
    return what + ": " + ec.message();
  }

  // An alert the peer sent (OpenSSL files them at SSL_AD_REASON_OFFSET and up).
  static bool peer_alert(const error_code& ec) {
    if (ec.category() != asio::error::get_ssl_category()) return false;
    return ERR_GET_REASON(static_cast<unsigned long>(ec.value())) >= SSL_AD_REASON_OFFSET;
  }

  // Counted for /metrics, and worded for the source's status.
  std::string tls_failure(long verify_result, const error_code& ec) const {
    count_tls_failure(authority_, tls_failure_kind(verify_result));
    return "TLS handshake with " + authority_ + " failed: " + tls_failure_reason(verify_result, ec);
  }

  void shut_down() {
    ++timer_generation_;
    timer_.cancel();
    resolver_.cancel();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  // Drops the callbacks (and whatever they captured) once no user callback runs.
  void release() {
    done_ = nullptr;
    stream_ = {};
  }

  asio::io_context& ioc_;
  http_request req_;
  std::function<void(http_result)> done_;
  http_stream_handlers stream_;
  bool streaming_ = false;
  bool finished_ = false;
  bool timed_out_ = false;
  bool head_seen_ = false;
  std::string authority_;
  std::string timer_message_;
  std::uint64_t timer_generation_ = 0;
  tcp::resolver resolver_{ioc_};
  tcp::socket socket_{ioc_};
  // https only. The context outlives the stream that points into it.
  std::shared_ptr<tls_context> tls_context_;
  std::optional<asio::ssl::stream<tcp::socket&>> tls_;
  asio::steady_timer timer_{ioc_};
  boost::beast::flat_buffer buffer_{read_buffer_limit};
  http::request<http::string_body> request_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::optional<http::response_parser<http::buffer_body>> stream_parser_;
  std::array<char, stream_piece> piece_{};
};

}  // namespace

std::shared_ptr<http_call> http_fetch(asio::io_context& ioc, http_request req,
                                      std::function<void(http_result)> done) {
  auto op = std::make_shared<http_operation>(ioc, std::move(req), std::move(done));
  op->start();
  return op;
}

std::shared_ptr<http_call> http_open_stream(asio::io_context& ioc, http_request req,
                                            http_stream_handlers handlers) {
  auto op = std::make_shared<http_operation>(ioc, std::move(req), std::move(handlers));
  op->start();
  return op;
}

}  // namespace tidings::net
