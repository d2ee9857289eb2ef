#include "actors/watch_feed.hpp"

namespace tidings::actors {

watch_feed::watch_feed(watch_filter_actor owner, std::uint64_t generation, std::size_t max_queued_frames)
    : owner_(std::move(owner)), generation_(generation), max_queued_(max_queued_frames) {}

void watch_feed::deliver(frame_batch_ptr batch) {
  if (overflowed_.load(std::memory_order_relaxed)) return;
  auto n = batch->frames.size();
  if (queued_.fetch_add(n, std::memory_order_relaxed) + n > max_queued_) {
    if (!overflowed_.exchange(true)) caf::anon_send(owner_, overflow_atom::value, generation_);
    return;
  }
  caf::anon_send(owner_, feed_atom::value, generation_, std::move(batch));
}

void watch_feed::fetched(stream_key, fetch_reply reply) {
  caf::anon_send(owner_, fetched_atom::value, generation_,
                 fetch_reply_ptr(std::make_shared<fetch_reply>(std::move(reply))));
}

void watch_feed::moved(stream_key, caf::actor_addr) {
  if (!overflowed_.exchange(true)) caf::anon_send(owner_, overflow_atom::value, generation_);
}

void watch_feed::consumed(std::size_t frames) {
  queued_.fetch_sub(frames, std::memory_order_relaxed);
}

}  // namespace tidings::actors
