#include "relay/io_shard.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "logging/log.hpp"
#include "relay/sse_session.hpp"

namespace tidings::relay {

namespace net = boost::asio;

io_shard::io_shard(std::size_t index, actors::hub_registry& hubs, probe* metrics)
    : index_(index), hubs_(hubs), metrics_(metrics), work_(net::make_work_guard(ioc_)) {}

io_shard::~io_shard() {
  join();
}

void io_shard::start() {
  thread_ = std::thread([this] { ioc_.run(); });
}

void io_shard::stop_context() {
  work_.reset();
  ioc_.stop();
}

void io_shard::join() {
  if (thread_.joinable()) thread_.join();
}

// Posted handlers hold the shard weakly: one left in a stopped context must
// not keep the shard, and so the context that holds it, alive (a leak at
// every shutdown that stopped the context before the queue ran dry).

void io_shard::deliver(actors::frame_batch_ptr batch) {
  net::post(ioc_, [weak = weak_from_this(), batch = std::move(batch)] {
    auto self = weak.lock();
    if (!self) return;
    auto it = self->live_.find(key_string(batch->stream));
    if (it == self->live_.end()) return;
    // A session may end inside on_frames (overflow); it then only clears
    // its entry, and the vector is compacted after the loop.
    self->delivering_ = true;
    auto& entries = it->second;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].session) entries[i].session->on_frames(entries[i].index, *batch);
    }
    self->delivering_ = false;
    for (auto& key : self->dirty_) {
      auto d = self->live_.find(key);
      if (d == self->live_.end()) continue;
      std::erase_if(d->second, [](const live_entry& e) { return e.session == nullptr; });
      if (d->second.empty()) self->drop_feed(d);
    }
    self->dirty_.clear();
  });
}

void io_shard::fetched(actors::stream_key stream, actors::fetch_reply reply) {
  net::post(ioc_, [weak = weak_from_this(), stream = std::move(stream), reply = std::move(reply)]() mutable {
    auto self = weak.lock();
    if (!self) return;
    auto session_id = reply.subscription >> subscription_index_bits;
    auto index = static_cast<std::size_t>(reply.subscription & ((1U << subscription_index_bits) - 1));
    auto it = self->sessions_.find(session_id);
    if (it != self->sessions_.end()) {
      // Keep the session alive through the call even if it closes inside.
      auto session = it->second;
      session->on_fetched(index, reply);
    } else if (reply.registered) {
      // The session ended while its subscription was being set up.
      caf::anon_send(caf::actor_cast<actors::stream_actor>(reply.registered_at), actors::unsub_atom::value,
                     actors::fanout_sink_ptr(self));
    }
  });
}

void io_shard::moved(actors::stream_key stream, caf::actor_addr from) {
  net::post(ioc_, [weak = weak_from_this(), stream = std::move(stream), from = std::move(from)] {
    auto self = weak.lock();
    if (!self) return;
    auto it = self->live_.find(key_string(stream));
    if (it == self->live_.end()) return;
    // Copied first: each session leaves live_ as it goes back to fetching.
    std::vector<std::pair<std::shared_ptr<sse_session>, std::size_t>> affected;
    for (auto& e : it->second) {
      if (!e.session) continue;
      if (auto s = self->sessions_.find(e.session_id); s != self->sessions_.end())
        affected.emplace_back(s->second, e.index);
    }
    for (auto& [session, index] : affected) session->on_moved(index, from);
  });
}

std::uint64_t io_shard::add_session(std::shared_ptr<sse_session> s) {
  auto id = next_session_++;
  sessions_.emplace(id, std::move(s));
  ++session_count_;
  return id;
}

void io_shard::remove_session(std::uint64_t id) {
  if (sessions_.erase(id) > 0 && --session_count_ == 0 && on_idle_) on_idle_();
}

void io_shard::add_live(const actors::stream_key& stream, sse_session* session, std::uint64_t session_id,
                        std::size_t index) {
  auto& entries = live_[key_string(stream)];
  if (entries.empty() && metrics_) metrics_->feed_opened();
  entries.push_back({session, session_id, index});
}

void io_shard::remove_live(const actors::stream_key& stream, std::uint64_t session_id, std::size_t index) {
  auto key = key_string(stream);
  auto it = live_.find(key);
  if (it == live_.end()) return;
  auto match = [&](const live_entry& e) { return e.session_id == session_id && e.index == index; };
  if (delivering_) {
    for (auto& e : it->second)
      if (match(e)) e.session = nullptr;
    dirty_.push_back(std::move(key));
    return;
  }
  std::erase_if(it->second, match);
  if (it->second.empty()) drop_feed(it);
}

void io_shard::drop_feed(live_map::iterator it) {
  live_.erase(it);
  if (metrics_) metrics_->feed_closed();
}

void io_shard::defer_flush(std::shared_ptr<sse_session> s, std::chrono::steady_clock::time_point due) {
  deferred_.push_back(std::move(s));
  if (flush_posted_) return;
  if (due <= std::chrono::steady_clock::now()) {
    flush_posted_ = true;
    net::post(ioc_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->flush_pass();
    });
    return;
  }
  if (flush_armed_) return;
  flush_armed_ = true;
  flush_timer_.expires_at(due);
  flush_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (!self) return;
    self->flush_armed_ = false;
    if (ec || self->flush_posted_) return;
    self->flush_pass();
  });
}

void io_shard::flush_pass() {
  flush_posted_ = false;
  // A few sessions per pass, then yield to whatever else is queued.
  constexpr std::size_t per_pass = 64;
  for (std::size_t i = 0; i < per_pass && !deferred_.empty(); ++i) {
    auto s = std::move(deferred_.front());
    deferred_.pop_front();
    s->flush_deferred();
  }
  if (!deferred_.empty()) {
    flush_posted_ = true;
    net::post(ioc_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->flush_pass();
    });
  }
}

void io_shard::drain(std::string reconnect_url) {
  net::post(ioc_, [weak = weak_from_this(), reconnect_url = std::move(reconnect_url)] {
    auto self = weak.lock();
    if (!self) return;
    // Copy: sessions remove themselves as they close.
    std::vector<std::shared_ptr<sse_session>> all;
    for (auto& [id, s] : self->sessions_) all.push_back(s);
    for (auto& s : all) s->close_with_closing(reconnect_url);
  });
}

void io_shard::recheck_sessions() {
  net::post(ioc_, [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self) return;
    std::vector<std::shared_ptr<sse_session>> all;
    for (auto& [id, s] : self->sessions_) all.push_back(s);
    for (auto& s : all) s->recheck_auth();
  });
}

void io_shard::list_sessions(std::function<void(std::vector<session_info>)> reply) {
  net::post(ioc_, [weak = weak_from_this(), reply = std::move(reply)] {
    auto self = weak.lock();
    if (!self) return;
    std::vector<session_info> out;
    out.reserve(self->sessions_.size());
    for (auto& [id, s] : self->sessions_) out.push_back(s->info());
    reply(std::move(out));
  });
}

}  // namespace tidings::relay
