#include "client/http_client.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "client/stream_connect.hpp"

namespace tidings::client {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

// A response body larger than this is a broken server, not data we want.
constexpr std::uint64_t max_response_body = 64ull << 20;
constexpr std::uint32_t max_response_header = 64u << 10;

std::uint16_t parse_port(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument("bad port in endpoint '" + whole + "'");
  }
  const unsigned long value = std::stoul(text);
  if (value == 0 || value > 65535) {
    throw std::invalid_argument("port out of range in endpoint '" + whole + "'");
  }
  return static_cast<std::uint16_t>(value);
}

struct op_state {
  bool done = false;
  beast::error_code ec;
  std::size_t bytes = 0;
};

auto completion(op_state& st) {
  return [&st](beast::error_code ec, std::size_t n = 0) {
    st.done = true;
    st.ec = ec;
    st.bytes = n;
  };
}

// Closing the socket is the only portable way to abandon an operation; then
// the aborted handler has to run before `st` may go out of scope.
void abandon(net::io_context& ioc, beast::tcp_stream& stream, op_state& st) {
  beast::error_code ignored;
  stream.socket().close(ignored);
  ioc.restart();
  while (!st.done && ioc.run_one() > 0) {
  }
  ioc.restart();
}

std::string describe(const endpoint& ep) {
  return ep.host + ":" + std::to_string(ep.port);
}

}  // namespace

bool run_until(net::io_context& ioc, const bool& done, clock_type::time_point deadline) {
  while (!done) {
    if (ioc.stopped()) ioc.restart();
    if (ioc.run_one_until(deadline) == 0) {
      if (done) break;
      // Either the deadline passed or nothing is left that could set `done`.
      return false;
    }
  }
  return true;
}

void connect_stream(net::io_context& ioc, beast::tcp_stream& stream, const endpoint& ep,
                    std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  beast::error_code ec;
  std::vector<tcp::endpoint> targets;
  const auto address = net::ip::make_address(ep.host, ec);
  if (!ec) {
    targets.emplace_back(address, ep.port);
  } else {
    // A name: resolve asynchronously so the deadline holds for slow DNS too.
    tcp::resolver resolver(ioc);
    bool done = false;
    beast::error_code resolve_ec;
    resolver.async_resolve(ep.host, std::to_string(ep.port),
                           [&](beast::error_code e, const tcp::resolver::results_type& r) {
                             done = true;
                             resolve_ec = e;
                             for (const auto& entry : r) targets.push_back(entry.endpoint());
                           });
    if (!run_until(ioc, done, deadline)) {
      resolver.cancel();
      ioc.restart();
      while (!done && ioc.run_one() > 0) {
      }
      ioc.restart();
      throw transport_error("resolving " + ep.host + " timed out");
    }
    ioc.restart();
    if (resolve_ec || targets.empty()) {
      throw transport_error("cannot resolve " + ep.host + ": " + resolve_ec.message());
    }
  }

  op_state st;
  net::async_connect(stream.socket(), targets, [&st](beast::error_code e, const tcp::endpoint&) {
    st.done = true;
    st.ec = e;
  });
  if (!run_until(ioc, st.done, deadline)) {
    abandon(ioc, stream, st);
    throw transport_error("connecting to " + describe(ep) + " timed out");
  }
  ioc.restart();
  if (st.ec) {
    beast::error_code ignored;
    stream.socket().close(ignored);
    throw transport_error("cannot connect to " + describe(ep) + ": " + st.ec.message());
  }
  // Requests and events are small; waiting for Nagle only adds latency.
  stream.socket().set_option(tcp::no_delay(true), ec);
}

endpoint parse_endpoint(const std::string& text) {
  std::string rest = text;
  bool url = false;
  if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
    url = true;
    if (const auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  }
  if (rest.empty()) throw std::invalid_argument("empty endpoint '" + text + "'");

  endpoint ep;
  if (std::all_of(rest.begin(), rest.end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (url) throw std::invalid_argument("missing host in endpoint '" + text + "'");
    ep.port = parse_port(rest, text);
    return ep;
  }
  std::string host;
  std::optional<std::string> port;
  if (rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) throw std::invalid_argument("bad IPv6 endpoint '" + text + "'");
    host = rest.substr(1, close - 1);
    const std::string tail = rest.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':') throw std::invalid_argument("bad endpoint '" + text + "'");
      port = tail.substr(1);
    }
  } else {
    const auto colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (host.empty()) throw std::invalid_argument("missing host in endpoint '" + text + "'");
  if (host.find_first_of(" \t\r\n/?#@") != std::string::npos) {
    throw std::invalid_argument("bad host in endpoint '" + text + "'");
  }
  ep.host = host;
  if (port) {
    ep.port = parse_port(*port, text);
  } else if (url) {
    ep.port = 80;
  } else {
    throw std::invalid_argument("missing port in endpoint '" + text + "' (want HOST:PORT)");
  }
  return ep;
}

std::string url_encode(const std::string& value) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0x0f]);
    }
  }
  return out;
}

struct http_connection::impl {
  endpoint ep;
  std::chrono::milliseconds timeout;
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  bool connected = false;

  void disconnect() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
    buffer.clear();
    connected = false;
  }

  // Runs the operation started by `start` until it completes or `deadline`.
  template <class Start>
  op_state run(Start&& start, clock_type::time_point deadline, const char* what) {
    op_state st;
    start(completion(st));
    if (!run_until(ioc, st.done, deadline)) {
      abandon(ioc, stream, st);
      connected = false;
      buffer.clear();
      throw transport_error(std::string(what) + " " + describe(ep) + " timed out");
    }
    ioc.restart();
    return st;
  }

  // nullopt: a reused connection turned out to be closed by the server
  // before any of the response arrived, so the request may be sent again.
  std::optional<http_response> attempt(const http::request<http::string_body>& req,
                                       clock_type::time_point deadline, bool reused) {
    const auto wrote = run([&](auto&& handler) { http::async_write(stream, req, std::move(handler)); },
                           deadline, "sending to");
    if (wrote.ec) {
      disconnect();
      if (reused) return std::nullopt;
      throw transport_error("sending to " + describe(ep) + " failed: " + wrote.ec.message());
    }

    http::response_parser<http::string_body> parser;
    parser.body_limit(max_response_body);
    parser.header_limit(max_response_header);
    // A HEAD answer carries GET's Content-Length and no body.
    parser.skip(req.method() == http::verb::head);
    const auto read =
        run([&](auto&& handler) { http::async_read(stream, buffer, parser, std::move(handler)); }, deadline,
            "reading from");
    if (read.ec) {
      const bool nothing_yet = !parser.got_some();
      disconnect();
      if (reused && nothing_yet &&
          (read.ec == http::error::end_of_stream || read.ec == net::error::eof ||
           read.ec == net::error::connection_reset)) {
        return std::nullopt;
      }
      throw transport_error("reading from " + describe(ep) + " failed: " + read.ec.message());
    }

    auto res = parser.release();
    http_response out;
    out.status = static_cast<int>(res.result_int());
    for (const auto& field : res) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      auto [it, fresh] = out.headers.emplace(name, std::string(field.value()));
      if (!fresh) it->second += ", " + std::string(field.value());
    }
    out.body = std::move(res.body());
    if (!res.keep_alive()) disconnect();
    return out;
  }
};

http_connection::http_connection(const endpoint& ep, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<impl>()) {
  impl_->ep = ep;
  impl_->timeout = timeout;
}

http_connection::~http_connection() {
  if (impl_ && impl_->connected) impl_->disconnect();
}

http_response http_connection::request(const std::string& method, const std::string& target,
                                       const std::string& body, const header_list& headers) {
  auto& s = *impl_;
  const auto deadline = clock_type::now() + s.timeout;

  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, describe(s.ep));
  req.set(http::field::user_agent, "tidings-client");
  for (const auto& [name, value] : headers) req.set(name, value);
  if (!body.empty() && req.find(http::field::content_type) == req.end()) {
    req.set(http::field::content_type, "application/json");
  }
  req.body() = body;
  req.keep_alive(true);
  req.prepare_payload();

  for (int round = 0; round < 2; ++round) {
    const bool reused = s.connected;
    if (!s.connected) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
      if (left.count() <= 0) throw transport_error("request to " + describe(s.ep) + " timed out");
      connect_stream(s.ioc, s.stream, s.ep, left);
      s.connected = true;
    }
    if (auto res = s.attempt(req, deadline, reused)) return std::move(*res);
  }
  throw transport_error("connection to " + describe(s.ep) + " keeps closing");
}

http_response request(const endpoint& ep, const std::string& method, const std::string& target,
                      const std::string& body, const header_list& headers,
                      std::chrono::milliseconds timeout) {
  http_connection conn(ep, timeout);
  return conn.request(method, target, body, headers);
}

std::string raw_exchange(const endpoint& ep, const std::string& raw, std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  connect_stream(ioc, stream, ep, timeout);

  op_state wrote;
  net::async_write(stream, net::buffer(raw), completion(wrote));
  if (!run_until(ioc, wrote.done, deadline)) {
    abandon(ioc, stream, wrote);
    return {};
  }
  ioc.restart();
  // A write error is fine: the server may answer and close before reading
  // all of a malformed request; what it sent is still worth returning.

  std::string out;
  std::array<char, 16384> chunk{};
  for (;;) {
    op_state rd;
    stream.async_read_some(net::buffer(chunk), completion(rd));
    if (!run_until(ioc, rd.done, deadline)) {
      abandon(ioc, stream, rd);
      break;
    }
    ioc.restart();
    out.append(chunk.data(), rd.bytes);
    if (rd.ec) break;
  }
  beast::error_code ignored;
  stream.socket().close(ignored);
  return out;
}

}  // namespace tidings::client
