#pragma once

// Opens N SSE sessions (session s sends the (s mod C)-th of C requests to the
// (s mod M)-th of M servers), at most `window` of them connecting at a time
// (so a node's listen backlog never overflows into SYN retries), and reports
// when every one of them has had its hello.

#include <chrono>
#include <cstdint>
#include <deque>
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
  session_pool(boost::asio::io_context& ioc, std::vector<boost::asio::ip::tcp::endpoint> servers, target peer,
               std::vector<std::string> requests, std::size_t count, std::size_t window,
               std::size_t read_size, event_sink* sink);

  // Sessions take events of any payload (someone else's stream) and report
  // only their cursor's seq; by default anything but the load payload fails.
  void accept_any_payload() { any_payload_ = true; }
  // Sessions connect over TLS (to the servers given, HTTPS ports); `tls`
  // outlives the pool.
  void use_tls(tls_sessions* tls) { tls_ = tls; }

  // `on_ready` once every session had its hello; `on_failure` at the first
  // failure of any session, before or after that.
  void open(std::function<void()> on_ready, std::function<void(const std::string&)> on_failure);
  void close_all();
  // After close_all: the same sessions connect again, session s sending
  // requests[s] (say, with its Last-Event-ID); counts start over.
  void reopen(std::vector<std::string> requests, std::function<void()> on_ready,
              std::function<void(const std::string&)> on_failure);
  // The id of the last event the session (in any of its connections) received.
  const std::string& last_id(std::size_t session) const;

  std::size_t ready() const { return ready_; }
  std::size_t size() const { return sessions_.size(); }

  void on_hello(std::size_t session) override;
  void on_event(std::size_t session, const delivery& d) override;
  void on_failure(std::size_t session, const std::string& why, bool lost) override;
  // The restart scenario: a session whose connection is lost connects again
  // with Last-Event-ID (every 50 ms while refused) for at most `give_up_after`;
  // anything else the node says wrong still fails the run.
  void reconnect_on_loss(std::chrono::milliseconds give_up_after) { give_up_after_ = give_up_after; }
  std::size_t reconnects() const { return reconnects_; }

 private:
  void start_next();
  void reconnect(std::size_t session);
  // A started session sending `request` (held by reference: it must outlive it).
  std::unique_ptr<sse_session> launch(std::size_t session, const std::string& request);

  boost::asio::io_context& ioc_;
  std::vector<boost::asio::ip::tcp::endpoint> servers_;  // session s connects to servers_[s % size]
  std::vector<std::string> requests_;                    // session s sends requests_[s % size]
  target peer_;
  std::size_t count_;
  std::size_t window_;
  std::size_t read_size_;
  event_sink* sink_;
  std::vector<std::unique_ptr<sse_session>> sessions_;
  // Closed sessions of an earlier round: their cancelled handlers still run
  // on the loop, so they live as long as the pool.
  std::vector<std::unique_ptr<sse_session>> retired_;
  // Resume requests of reconnected sessions; a deque, so the ones sessions
  // hold by reference never move.
  std::deque<std::string> requests_resumed_;
  std::vector<std::vector<std::string>> retired_requests_;
  std::vector<bool> hello_seen_;
  std::size_t ready_ = 0;
  bool failed_ = false;
  bool any_payload_ = false;
  tls_sessions* tls_ = nullptr;
  std::chrono::milliseconds give_up_after_{0};
  std::vector<std::string> last_ids_;        // per session, from its earlier connections
  std::vector<std::int64_t> failing_since_;  // per session: when its connection was lost (0: it is up)
  std::size_t reconnects_ = 0;
  bool closed_ = false;
  std::function<void()> on_ready_;
  std::function<void(const std::string&)> on_failure_;
};

}  // namespace tidings::load
