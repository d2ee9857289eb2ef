#include "apps/tidings_load/publisher_group.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace tidings::load {

namespace net = boost::asio;

publisher_group::publisher_group(const net::ip::tcp::endpoint& server, const load_options& opts,
                                 const std::string& pad)
    : events_(opts.events) {
  const auto k = std::min(opts.publishers, opts.events);
  for (std::size_t i = 0; i < k; ++i) {
    publishers_.push_back(std::make_unique<publisher>(ioc_, server, opts.peer, opts.stream, opts.token, i,
                                                      pad, static_cast<publish_source&>(*this)));
  }
  ack_latencies_.reserve(events_);
}

publisher_group::~publisher_group() {
  stop();
}

void publisher_group::start(net::io_context& home, done_handler on_done) {
  home_ = &home;
  on_done_ = std::move(on_done);
  // Queued before the thread exists, so every publisher starts on it.
  for (auto& p : publishers_) {
    net::post(ioc_, [raw = p.get()] { raw->start(); });
  }
  thread_ = std::thread([this] { ioc_.run(); });
}

void publisher_group::stop() {
  // Not through the publishers' close(): the loop may already have run out
  // of work, and a stopped loop runs nothing posted to it.
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
  for (auto& p : publishers_) p->close();
}

bool publisher_group::next_index(std::int64_t& index) {
  if (next_ >= events_) return false;
  index = static_cast<std::int64_t>(next_++);
  return true;
}

void publisher_group::on_ack(std::int64_t, std::int64_t sent_ns, std::int64_t acked_ns) {
  ack_latencies_.push_back(acked_ns - sent_ns);
  last_ack_ns_ = std::max(last_ack_ns_, acked_ns);
  if (acks_.fetch_add(1, std::memory_order_relaxed) + 1 == events_) report(true, {});
}

void publisher_group::on_publish_failure(const std::string& why) {
  report(false, why);
}

void publisher_group::report(bool ok, const std::string& why) {
  if (reported_) return;
  reported_ = true;
  net::post(*home_, [this, ok, why] { on_done_(ok, why); });
}

}  // namespace tidings::load
