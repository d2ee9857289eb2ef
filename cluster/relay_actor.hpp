#pragma once

// The relay of a stream another node owns (DESIGN.md "relay"): to this
// node's sessions, publishers and watches it looks like the stream's hub.
// It holds one feed from the owner's hub however many local subscribers
// there are, keeps a ring of what the feed brought for resumes, asks the
// owner for older pages, and forwards publishes to the owner, whose
// acknowledgement (after the owner made the events durable) it passes on.
//
//   opening ──first page (owner's head)──> live ──moved──> forwarding
//
// Fetches that arrive while opening wait. A feed that does not open within
// open_timeout is retried, and its waiting subscribers are told to resync
// with `owner_unreachable` (they reconnect with their cursors).

#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/hub_actor.hpp"
#include "actors/hub_registry.hpp"
#include "cluster/atoms.hpp"

namespace tidings::cluster {

// What readers and writers see of a stream, plus the owner's pages
// (FeedPage) and the open timer.
using relay_actor = actors::stream_actor::extend<caf::reacts_to<page_atom, std::string>,
                                                 caf::reacts_to<retry_atom, std::uint64_t>>;

struct relay_config {
  actors::stream_key stream;
  std::string owner_id;
  caf::actor owner;  // the owner's node actor
  std::string self_id;
  actors::hub_registry* registry = nullptr;
  std::size_t ring_events = 1024;
  std::chrono::milliseconds request_timeout{5000};
};

struct relay_state {
  static inline const char* name = "relay";

  relay_config cfg;
  bool open = false;   // the owner's first page arrived
  bool moved = false;  // routed elsewhere now: forward everything
  std::uint64_t attempt = 0;
  std::uint64_t reopen_attempt = 0;  // the attempt that is a reopen, not a timeout
  std::uint64_t epoch = 0;           // 0: the stream does not exist at the owner yet
  std::uint64_t head = 0;
  std::deque<actors::frame_ptr> ring;
  std::vector<actors::fetch_request_ptr> waiting;
  // The owner's node actor went down (its connection dropped): requests to
  // it would only time out, so none go until this relay is moved.
  bool owner_lost = false;
  // Requests out at the owner, answered here if the owner is lost first.
  std::uint64_t next_request = 1;
  std::map<std::uint64_t, actors::publish_request_ptr> publishing;
  std::map<std::uint64_t, actors::fetch_request_ptr> fetching;
  std::unordered_map<actors::fanout_sink*, std::pair<actors::fanout_sink_ptr, std::size_t>> sinks;
};

relay_actor::behavior_type relay(relay_actor::stateful_pointer<relay_state> self, relay_config cfg);

}  // namespace tidings::cluster
