#pragma once

// The sink a watch's filter registers with the hub of the stream it reads.
// Hub threads call it; it only forwards to the filter's mailbox. Deliveries
// are counted until the filter has processed them, so a slow filter cannot
// grow its mailbox without bound: past the limit the feed stops forwarding,
// tells the filter once, and the filter catches up page by page from its own
// cursor with a fresh feed (nothing is lost; the stream is the buffer).

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "actors/watch_actors.hpp"

namespace tidings::actors {

class watch_feed final : public fanout_sink {
 public:
  watch_feed(watch_filter_actor owner, std::uint64_t generation, std::size_t max_queued_frames);

  void deliver(frame_batch_ptr batch) override;
  void fetched(stream_key stream, fetch_reply reply) override;
  // Like an overflow: the filter catches up from its cursor with a new feed.
  void moved(stream_key stream, caf::actor_addr from) override;

  // The filter processed `frames` delivered frames.
  void consumed(std::size_t frames);
  std::uint64_t generation() const { return generation_; }

 private:
  watch_filter_actor owner_;
  std::uint64_t generation_;
  std::size_t max_queued_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> overflowed_{false};
};

}  // namespace tidings::actors
