#include "apps/tidings_load/publisher_group.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "apps/tidings_load/sse_session.hpp"
#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

namespace net = boost::asio;

publisher_group::publisher_group(const net::ip::tcp::endpoint& server, const load_options& opts,
                                 const std::string& pad, std::size_t first, std::size_t end)
    : first_(first),
      events_(std::min(end, opts.events)),
      batch_(opts.batch),
      streams_(std::max<std::size_t>(opts.streams, 1)),
      rate_(opts.rate),
      next_(first) {
  for (std::size_t k = 0; k < streams_; ++k)
    head_prefixes_.push_back(publish_head_prefix(opts.peer, server, stream_name(opts, k), opts.token));
  const auto n = std::min(opts.publishers, (events_ - first_ + batch_ - 1) / batch_);
  for (std::size_t i = 0; i < n; ++i) {
    publishers_.push_back(std::make_unique<publisher>(ioc_, server, opts.peer, head_prefixes_, i, pad,
                                                      static_cast<publish_source&>(*this)));
  }
}

// Events go in blocks of `batch` consecutive indexes, block b to stream
// b mod C, so every stream gets its share in order and a batch is one stream's.
std::size_t publisher_group::stream_of(std::int64_t index) const {
  return (static_cast<std::size_t>(index) / batch_) % streams_;
}

publisher_group::~publisher_group() {
  stop();
}

void publisher_group::start(net::io_context& home, done_handler on_done) {
  home_ = &home;
  on_done_ = std::move(on_done);
  start_ns_ = steady_ns();
  // Queued before the thread exists, so every publisher starts on it.
  for (auto& p : publishers_) {
    net::post(ioc_, [raw = p.get()] { raw->start(); });
  }
  thread_ = std::thread([this] { ioc_.run(); });
}

void publisher_group::retry_until_acked(std::chrono::milliseconds give_up_after) {
  for (auto& p : publishers_) p->retry_until_acked(give_up_after);
}

void publisher_group::stop() {
  // Not through the publishers' close(): the loop may already have run out
  // of work, and a stopped loop runs nothing posted to it.
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
  for (auto& p : publishers_) p->close();
}

bool publisher_group::next_batch(publish_batch& batch) {
  if (next_ >= events_) return false;
  batch.first = static_cast<std::int64_t>(next_);
  batch.count = std::min(batch_, events_ - next_);
  batch.stream = stream_of(batch.first);
  const auto offset = static_cast<double>(next_ - first_);
  batch.due_ns = rate_ > 0 ? start_ns_ + static_cast<std::int64_t>(offset * 1e9 / rate_) : 0;
  next_ += batch.count;
  return true;
}

void publisher_group::on_ack(const publish_batch& batch, std::int64_t sent_ns, std::int64_t acked_ns) {
  ack_latencies_.record(acked_ns - sent_ns);
  last_ack_ns_ = std::max(last_ack_ns_, acked_ns);
  const auto before = acks_.fetch_add(batch.count, std::memory_order_relaxed);
  const auto now = before + batch.count;
  if (on_notify_ && before < notify_at_ && now >= notify_at_) net::post(*home_, on_notify_);
  if (now >= events_ - first_) report(true, {});
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
