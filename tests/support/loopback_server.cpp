#include "tests/support/loopback_server.hpp"

#include <cstdio>
#include <memory>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

namespace tidings::testing {

namespace net = boost::asio;
using tcp = net::ip::tcp;

loopback_server::loopback_server(script s)
    : script_(std::move(s)), acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
  accept_thread_ = std::thread([this] { accept_loop(); });
}

loopback_server::~loopback_server() {
  stopping_ = true;
  // A blocking accept() is woken most portably by one last connection.
  {
    net::io_context ioc;
    tcp::socket wake(ioc);
    boost::system::error_code ignored;
    wake.connect(acceptor_.local_endpoint(), ignored);
  }
  accept_thread_.join();
  std::lock_guard lock(mutex_);
  for (auto& t : connections_) t.join();
}

client::endpoint loopback_server::address() const {
  return client::endpoint{"127.0.0.1", acceptor_.local_endpoint().port()};
}

unsigned short loopback_server::port() const {
  return acceptor_.local_endpoint().port();
}

std::string loopback_server::url(const std::string& target) const {
  return "http://127.0.0.1:" + std::to_string(port()) + target;
}

void loopback_server::accept_loop() {
  for (;;) {
    auto socket = std::make_shared<tcp::socket>(ioc_);
    boost::system::error_code ec;
    acceptor_.accept(*socket, ec);
    if (stopping_ || ec) return;
    ++accepted_;
    std::lock_guard lock(mutex_);
    connections_.emplace_back([this, socket] {
      try {
        script_(*socket);
      } catch (const std::exception& e) {
        // The client side of the test reports the failure; this says why.
        std::fprintf(stderr, "loopback_server script: %s\n", e.what());
      }
      boost::system::error_code ignored;
      socket->shutdown(tcp::socket::shutdown_both, ignored);
      socket->close(ignored);
    });
  }
}

std::string read_request(tcp_socket& s) {
  return read_http_request(s);
}

void write_all(tcp_socket& s, const std::string& bytes) {
  boost::system::error_code ignored;
  net::write(s, net::buffer(bytes), ignored);
}

void wait_for_close(tcp_socket& s) {
  char buf[1024];
  boost::system::error_code ec;
  while (!ec) s.read_some(net::buffer(buf), ec);
}

std::string chunked(const std::string& body, const std::vector<std::size_t>& sizes) {
  std::string out;
  std::size_t pos = 0;
  for (std::size_t i = 0; pos < body.size(); ++i) {
    const auto n = std::min(sizes[i % sizes.size()], body.size() - pos);
    char head[32];
    std::snprintf(head, sizeof head, "%zx\r\n", n);
    out += head;
    out += body.substr(pos, n);
    out += "\r\n";
    pos += n;
  }
  return out;
}

std::string chunk(const std::string& bytes) {
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", bytes.size());
  return head + bytes + "\r\n";
}

}  // namespace tidings::testing
