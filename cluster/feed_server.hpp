#pragma once

// Serves the other members' requests on the streams this node owns
// (ADR 0015): their forwarded publishes, the catch-up pages of their relays
// and the relays' live feeds, which it registers with this node's hubs and
// ends when a relay goes away. The node actor hands each request over
// whole; this actor decodes it.
//
// Requests are served only for streams this node owns in its own view (or
// that a source or watch here writes): while views differ, serving them
// would bounce a request between nodes. The asker retries (its relay) or
// answers 503 (a publish).

#include <caf/all.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/hub_registry.hpp"
#include "actors/stream_key.hpp"
#include "cluster/atoms.hpp"
#include "cluster/feed_sinks.hpp"

namespace tidings::cluster {

class cluster_view;

// The live feeds this node serves, for its counts: each stream with the
// members whose relays it feeds.
using served_feeds = std::map<actors::stream_key, std::vector<std::string>>;

using feed_server_actor = caf::typed_actor<
    // A member's PublishRequest; answers the PublishReply.
    caf::replies_to<publish_atom, std::string>::with<std::string>,
    // A relay's FetchRequest (without a cursor: the head only); answers a FeedPage.
    caf::replies_to<fetch_atom, std::string>::with<std::string>,
    // A relay on member `node id` asks for the live feed of a stream (FetchRequest).
    caf::reacts_to<open_atom, caf::actor, std::string, std::string>,
    // The relay lets go of its feed.
    caf::reacts_to<close_atom, caf::actor>,
    // A hub answered a publish or a page, by token (internal, from any thread).
    caf::reacts_to<done_atom, std::uint64_t, std::string>,
    // The feeds served now.
    caf::replies_to<stats_atom>::with<served_feeds>>;

struct feed_server_config {
  actors::hub_registry* hubs = nullptr;
  cluster_view* view = nullptr;
};

struct feed_server_state {
  static inline const char* name = "cluster-feed-server";
  // Not an aggregate: CAF 0.17 would construct one from its actor pointer.
  feed_server_state() = default;

  struct feed {
    std::string node;  // the relaying member
    actors::stream_key stream;
    std::shared_ptr<remote_feed> sink;
  };

  feed_server_config cfg;
  std::map<caf::actor_addr, feed> feeds;                                      // by relay
  std::map<std::uint64_t, caf::typed_response_promise<std::string>> waiting;  // by token
  std::uint64_t next_token = 1;
};

feed_server_actor::behavior_type feed_server(feed_server_actor::stateful_pointer<feed_server_state> self,
                                             feed_server_config cfg);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::served_feeds)
