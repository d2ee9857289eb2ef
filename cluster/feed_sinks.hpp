#pragma once

// Sinks the owner node registers with its hubs on behalf of other nodes.
// Hub threads call them; they only serialize and send.

#include <caf/all.hpp>
#include <memory>

#include "actors/hub_actor.hpp"

namespace tidings::cluster {

// A relay's feed: every committed batch of the stream goes to the relay on
// the other node as one FeedPage (LIVE), the first reply as CAUGHT_UP.
class remote_feed final : public actors::fanout_sink {
 public:
  explicit remote_feed(caf::actor relay) : relay_(std::move(relay)) {}
  void deliver(actors::frame_batch_ptr batch) override;
  void fetched(actors::stream_key stream, actors::fetch_reply reply) override;
  void moved(actors::stream_key stream, caf::actor_addr from) override;

 private:
  caf::actor relay_;
};

// One page of a relay's catch-up fetch: answered to the node actor, which
// holds the relay's request. Never stays registered.
class one_fetch final : public actors::fanout_sink, public std::enable_shared_from_this<one_fetch> {
 public:
  one_fetch(caf::actor node, std::uint64_t token) : node_(std::move(node)), token_(token) {}
  void deliver(actors::frame_batch_ptr) override {}
  void fetched(actors::stream_key stream, actors::fetch_reply reply) override;
  void moved(actors::stream_key, caf::actor_addr) override {}

 private:
  caf::actor node_;
  std::uint64_t token_;
};

}  // namespace tidings::cluster
