#include "apps/tidings_load/session_pool.hpp"

namespace tidings::load {

session_pool::session_pool(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& server,
                           target peer, std::string request, std::size_t count, std::size_t window,
                           std::size_t read_size, event_sink* sink)
    : ioc_(ioc),
      server_(server),
      request_(std::move(request)),
      peer_(peer),
      count_(count),
      window_(window),
      read_size_(read_size),
      sink_(sink) {
  sessions_.reserve(count);
  hello_seen_.assign(count, false);
}

void session_pool::open(std::function<void()> on_ready, std::function<void(const std::string&)> on_failure) {
  on_ready_ = std::move(on_ready);
  on_failure_ = std::move(on_failure);
  for (std::size_t i = 0; i < window_ && sessions_.size() < count_; ++i) start_next();
}

void session_pool::start_next() {
  if (sessions_.size() >= count_) return;
  const std::size_t id = sessions_.size();
  sessions_.push_back(std::make_unique<sse_session>(ioc_, server_, request_, peer_, *this, id, read_size_));
  if (any_payload_) sessions_.back()->accept_any_payload();
  sessions_.back()->start();
}

void session_pool::close_all() {
  for (auto& s : sessions_) s->close();
}

void session_pool::on_hello(std::size_t session) {
  if (hello_seen_[session]) return;
  hello_seen_[session] = true;
  ++ready_;
  start_next();
  if (ready_ == count_ && on_ready_) on_ready_();
}

void session_pool::on_event(std::size_t session, const delivery& d) {
  if (sink_) sink_->on_event(session, d);
}

void session_pool::on_failure(std::size_t session, const std::string& why) {
  if (failed_) return;
  failed_ = true;
  if (on_failure_) on_failure_("session " + std::to_string(session) + ": " + why);
}

}  // namespace tidings::load
