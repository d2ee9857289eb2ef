#include "tests/support/fake_backend.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tidings::testing {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

fake_backend::fake_backend() : acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
  accept();
  thread_ = std::thread([this] { ioc_.run(); });
}

fake_backend::~fake_backend() {
  net::post(ioc_, [this] { ioc_.stop(); });
  thread_.join();
}

void fake_backend::set(int status, std::string body, std::string content_type) {
  std::lock_guard lock(mutex_);
  status_ = status;
  body_ = std::move(body);
  content_type_ = std::move(content_type);
}

std::string fake_backend::url(const std::string& target) const {
  return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + target;
}

void fake_backend::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) return;
    serve(std::make_shared<tcp::socket>(std::move(socket)));
    accept();
  });
}

void fake_backend::serve(const std::shared_ptr<tcp::socket>& socket) {
  auto buffer = std::make_shared<boost::beast::flat_buffer>();
  auto req = std::make_shared<http::request<http::string_body>>();
  http::async_read(*socket, *buffer, *req,
                   [this, socket, buffer, req](boost::system::error_code ec, std::size_t) {
                     if (ec) return;
                     ++requests_;
                     auto res = std::make_shared<http::response<http::string_body>>();
                     {
                       std::lock_guard lock(mutex_);
                       last_method_ = std::string(req->method_string());
                       last_body_ = req->body();
                       targets_.emplace_back(req->target());
                       last_headers_.clear();
                       for (const auto& f : *req)
                         last_headers_[std::string(f.name_string())] = std::string(f.value());
                       res->result(static_cast<unsigned>(status_));
                       res->set(http::field::content_type, content_type_);
                       res->body() = body_;
                     }
                     res->version(11);
                     res->keep_alive(false);
                     res->prepare_payload();
                     http::async_write(*socket, *res, [socket, res](boost::system::error_code, std::size_t) {
                       boost::system::error_code ignored;
                       socket->shutdown(tcp::socket::shutdown_both, ignored);
                     });
                   });
}

std::string fake_backend::last_method() const {
  std::lock_guard lock(mutex_);
  return last_method_;
}

std::string fake_backend::last_body() const {
  std::lock_guard lock(mutex_);
  return last_body_;
}

std::vector<std::string> fake_backend::targets() const {
  std::lock_guard lock(mutex_);
  return targets_;
}

std::string fake_backend::last_header(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = last_headers_.find(name);
  return it == last_headers_.end() ? std::string() : it->second;
}

}  // namespace tidings::testing
