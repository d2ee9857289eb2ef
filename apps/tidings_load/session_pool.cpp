#include "apps/tidings_load/session_pool.hpp"

#include <boost/asio/steady_timer.hpp>

#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

session_pool::session_pool(boost::asio::io_context& ioc, std::vector<boost::asio::ip::tcp::endpoint> servers,
                           target peer, std::vector<std::string> requests, std::size_t count,
                           std::size_t window, std::size_t read_size, event_sink* sink)
    : ioc_(ioc),
      servers_(std::move(servers)),
      requests_(std::move(requests)),
      peer_(peer),
      count_(count),
      window_(window),
      read_size_(read_size),
      sink_(sink) {
  sessions_.reserve(count);
  hello_seen_.assign(count, false);
  last_ids_.assign(count, {});
  failing_since_.assign(count, 0);
}

void session_pool::open(std::function<void()> on_ready, std::function<void(const std::string&)> on_failure) {
  on_ready_ = std::move(on_ready);
  on_failure_ = std::move(on_failure);
  for (std::size_t i = 0; i < window_ && sessions_.size() < count_; ++i) start_next();
}

void session_pool::start_next() {
  if (sessions_.size() >= count_) return;
  const std::size_t id = sessions_.size();
  sessions_.push_back(launch(id, requests_[id % requests_.size()]));
}

std::unique_ptr<sse_session> session_pool::launch(std::size_t session, const std::string& request) {
  auto s = std::make_unique<sse_session>(ioc_, servers_[session % servers_.size()], request, peer_, *this,
                                         session, read_size_, tls_);
  if (any_payload_) s->accept_any_payload();
  s->start();
  return s;
}

void session_pool::close_all() {
  closed_ = true;  // a reconnect still waiting must not open a session now
  for (auto& s : sessions_) s->close();
}

void session_pool::reopen(std::vector<std::string> requests, std::function<void()> on_ready,
                          std::function<void(const std::string&)> on_failure) {
  for (auto& s : sessions_) retired_.push_back(std::move(s));
  sessions_.clear();
  // Retired sessions hold their requests by reference.
  retired_requests_.push_back(std::move(requests_));
  requests_ = std::move(requests);
  closed_ = false;
  hello_seen_.assign(count_, false);
  ready_ = 0;
  open(std::move(on_ready), std::move(on_failure));
}

void session_pool::on_hello(std::size_t session) {
  failing_since_[session] = 0;
  if (hello_seen_[session]) return;
  hello_seen_[session] = true;
  ++ready_;
  start_next();
  if (ready_ == count_ && on_ready_) on_ready_();
}

void session_pool::on_event(std::size_t session, const delivery& d) {
  if (sink_) sink_->on_event(session, d);
}

const std::string& session_pool::last_id(std::size_t session) const {
  const auto& now = sessions_[session]->last_id();
  return now.empty() ? last_ids_[session] : now;
}

void session_pool::reconnect(std::size_t session) {
  auto timer = std::make_shared<boost::asio::steady_timer>(ioc_, std::chrono::milliseconds(50));
  timer->async_wait([this, session, timer](const boost::system::error_code& ec) {
    if (ec || failed_ || closed_) return;
    auto& slot = sessions_[session];
    if (!slot->last_id().empty()) last_ids_[session] = slot->last_id();
    retired_.push_back(std::move(slot));
    requests_resumed_.push_back(
        with_last_event_id(requests_[session % requests_.size()], last_ids_[session]));
    ++reconnects_;
    slot = launch(session, requests_resumed_.back());
  });
}

void session_pool::on_failure(std::size_t session, const std::string& why, bool lost) {
  if (lost && give_up_after_.count() && !failed_) {
    const auto now = steady_ns();
    if (!failing_since_[session]) failing_since_[session] = now;
    if (now - failing_since_[session] <= std::chrono::nanoseconds(give_up_after_).count())
      return reconnect(session);
  }
  if (failed_) return;
  failed_ = true;
  if (on_failure_) on_failure_("session " + std::to_string(session) + ": " + why);
}

}  // namespace tidings::load
