#pragma once

// Opens N SSE sessions on one stream, at most `window` of them connecting at
// a time (so the node's listen backlog never overflows into SYN retries),
// and reports when every one of them has had its hello.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/tidings_load/sse_session.hpp"

namespace tidings::load {

class event_sink {
 public:
  virtual void on_event(std::size_t session, const delivery& d) = 0;

 protected:
  ~event_sink() = default;
};

class session_pool final : public session_observer {
 public:
  session_pool(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& server, target peer,
               std::string request, std::size_t count, std::size_t window, std::size_t read_size,
               event_sink* sink);

  // Sessions take events of any payload (someone else's stream) and report
  // only their cursor's seq; by default anything but the load payload fails.
  void accept_any_payload() { any_payload_ = true; }

  // `on_ready` once every session had its hello; `on_failure` at the first
  // failure of any session, before or after that.
  void open(std::function<void()> on_ready, std::function<void(const std::string&)> on_failure);
  void close_all();

  std::size_t ready() const { return ready_; }
  std::size_t size() const { return sessions_.size(); }

  void on_hello(std::size_t session) override;
  void on_event(std::size_t session, const delivery& d) override;
  void on_failure(std::size_t session, const std::string& why) override;

 private:
  void start_next();

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::endpoint server_;
  std::string request_;
  target peer_;
  std::size_t count_;
  std::size_t window_;
  std::size_t read_size_;
  event_sink* sink_;
  std::vector<std::unique_ptr<sse_session>> sessions_;
  std::vector<bool> hello_seen_;
  std::size_t ready_ = 0;
  bool failed_ = false;
  bool any_payload_ = false;
  std::function<void()> on_ready_;
  std::function<void(const std::string&)> on_failure_;
};

}  // namespace tidings::load
