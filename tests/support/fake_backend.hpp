#pragma once

// A resource backend for the webhook and poll tests: an HTTP server on
// 127.0.0.1 (ephemeral port, its own thread) answering every request with
// the response the test set last, counting the requests it served and
// keeping the last one's method and body.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace tidings::testing {

class fake_backend {
 public:
  fake_backend();
  ~fake_backend();
  fake_backend(const fake_backend&) = delete;
  fake_backend& operator=(const fake_backend&) = delete;

  void set(int status, std::string body, std::string content_type = "application/json");
  std::string url(const std::string& target = "/resource") const;
  int requests() const { return requests_.load(); }
  // The last request's method and body.
  std::string last_method() const;
  std::string last_body() const;
  // Every request's target, in order; the last request's header (as sent).
  std::vector<std::string> targets() const;
  std::string last_header(const std::string& name) const;

 private:
  void accept();
  void serve(const std::shared_ptr<boost::asio::ip::tcp::socket>& socket);

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  mutable std::mutex mutex_;
  std::string last_method_;
  std::string last_body_;
  std::vector<std::string> targets_;
  std::map<std::string, std::string> last_headers_;
  int status_ = 200;
  std::string body_ = "{}";
  std::string content_type_ = "application/json";
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace tidings::testing
