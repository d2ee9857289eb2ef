#pragma once

// One I/O thread with its own io_context. It is also the fan-out sink hubs
// deliver to: a hub posts one committed batch per shard, and the shard hands
// it to each of its sessions on this thread, so no actor message is sent per
// session and no lock is taken on the delivery path.

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actors/hub_registry.hpp"
#include "actors/messages.hpp"
#include "relay/probe.hpp"
#include "relay/session_info.hpp"

namespace tidings::relay {

class sse_session;

class io_shard : public actors::fanout_sink, public std::enable_shared_from_this<io_shard> {
 public:
  // `metrics` may be null (not measured); it outlives the shard.
  io_shard(std::size_t index, actors::hub_registry& hubs, probe* metrics = nullptr);
  ~io_shard() override;

  boost::asio::io_context& context() { return ioc_; }
  std::size_t index() const { return index_; }
  actors::hub_registry& hubs() { return hubs_; }
  probe* metrics() const { return metrics_; }

  void start();
  // Ends the thread once the context has no more work (after stop_context()).
  void stop_context();
  void join();

  // fanout_sink: called from hub threads.
  void deliver(actors::frame_batch_ptr batch) override;
  void fetched(actors::stream_key stream, actors::fetch_reply reply) override;
  void moved(actors::stream_key stream, caf::actor_addr from) override;

  // The rest runs on this shard's thread only.
  std::uint64_t add_session(std::shared_ptr<sse_session> s);
  void remove_session(std::uint64_t id);
  void add_live(const actors::stream_key& stream, sse_session* session, std::uint64_t session_id,
                std::size_t index);
  void remove_live(const actors::stream_key& stream, std::uint64_t session_id, std::size_t index);
  // Every session gets `closing` (with where to reconnect, in a cluster:
  // "http://host:port", or "") and ends.
  void drain(std::string reconnect_url = {});
  // Calls s->flush_deferred() at `due` (or a little earlier: one timer serves
  // every session waiting on this shard).
  void defer_flush(std::shared_ptr<sse_session> s, std::chrono::steady_clock::time_point due);

  std::size_t session_count() const { return session_count_.load(); }
  // Called on this shard's thread whenever the last session has gone.
  void on_idle(std::function<void()> f) { on_idle_ = std::move(f); }
  // After join(): drop sessions that never finished (drain deadline passed).
  void discard_sessions() {
    deferred_.clear();
    sessions_.clear();
    live_.clear();
  }

  // Subscription ids carry the session id and the stream's index in it
  // (at most 128 streams per session; tenants' limits stay below).
  static constexpr unsigned subscription_index_bits = 7;
  static std::uint64_t subscription_id(std::uint64_t session, std::size_t index) {
    return (session << subscription_index_bits) | index;
  }
  // Every session asks its guard whether its credential still holds.
  void recheck_sessions();
  // Calls `reply` on this shard's thread with every session's info; never
  // when the shard has stopped (callers bound their wait).
  void list_sessions(std::function<void(std::vector<session_info>)> reply);

 private:
  struct live_entry {
    sse_session* session;  // null: removed while a delivery was running
    std::uint64_t session_id;
    std::size_t index;
  };
  void flush_pass();
  static std::string key_string(const actors::stream_key& k) { return k.tenant + '\0' + k.name; }

  std::size_t index_;
  actors::hub_registry& hubs_;
  probe* metrics_;
  boost::asio::io_context ioc_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
  std::uint64_t next_session_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<sse_session>> sessions_;
  using live_map = std::unordered_map<std::string, std::vector<live_entry>>;
  // The shard's last live session of a stream left: its feed goes.
  void drop_feed(live_map::iterator it);
  live_map live_;
  std::atomic<std::size_t> session_count_{0};
  bool delivering_ = false;
  std::function<void()> on_idle_;
  boost::asio::steady_timer flush_timer_{ioc_};
  bool flush_armed_ = false;
  bool flush_posted_ = false;
  std::deque<std::shared_ptr<sse_session>> deferred_;
  std::vector<std::string> dirty_;  // live_ keys with entries removed during delivery
};

}  // namespace tidings::relay
