#include "cluster/relay_actor.hpp"

#include "cluster/wire.hpp"
#include "core/retention.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = relay_actor::stateful_pointer<relay_state>;
using actors::fetch_reply;
using actors::fetch_status;

// Longer than a new owner may hold the first fetch while it pulls the log.
constexpr auto open_timeout = std::chrono::seconds(6);

core::cursor head_cursor(const relay_state& st) {
  return {st.epoch, st.head};
}

void open_feed(self_ptr self) {
  auto& st = self->state;
  proto::FetchRequest req;
  req.set_tenant(st.cfg.stream.tenant);
  req.set_stream(st.cfg.stream.name);
  req.set_has_after(false);
  caf::anon_send(st.cfg.owner, open_atom::value, caf::actor_cast<caf::actor>(self), st.cfg.self_id,
                 req.SerializeAsString());
  self->delayed_send(self, open_timeout, retry_atom::value, ++st.attempt);
}

void register_sink(self_ptr self, const actors::fetch_request_ptr& req, fetch_reply& r) {
  auto& slot = self->state.sinks[req->sink.get()];
  slot.first = req->sink;
  ++slot.second;
  r.registered = true;
  r.registered_at = self->address();
}

void reply(self_ptr self, const actors::fetch_request_ptr& req, fetch_reply r, fetch_status status,
           std::string reason = {}) {
  r.subscription = req->subscription;
  r.status = status;
  r.reason = std::move(reason);
  if (status == fetch_status::caught_up && !req->probe) register_sink(self, req, r);
  req->sink->fetched(self->state.cfg.stream, std::move(r));
}

void forward_fetch(self_ptr self, const actors::fetch_request_ptr& req) {
  caf::anon_send(self->state.cfg.registry->get(self->state.cfg.stream), actors::fetch_atom::value, req);
}

// Older than the ring, a probe of a cursor, or anything the ring cannot
// vouch for: the owner answers. Its page goes to the subscriber as a page;
// the subscriber's next fetch is served here once it reaches the ring.
void fetch_from_owner(self_ptr self, const actors::fetch_request_ptr& req) {
  auto& st = self->state;
  if (st.owner_lost) return st.waiting.push_back(req);  // the move that follows forwards it
  auto token = st.next_request++;
  st.fetching.emplace(token, req);
  proto::FetchRequest p;
  p.set_tenant(st.cfg.stream.tenant);
  p.set_stream(st.cfg.stream.name);
  p.set_has_after(req->after.has_value());
  if (req->after) {
    p.set_after_epoch(req->after->epoch);
    p.set_after_seq(req->after->seq);
  }
  p.set_max_frames(static_cast<std::uint32_t>(std::min<std::size_t>(req->max_frames, 4096)));
  p.set_max_bytes(static_cast<std::uint32_t>(std::min<std::size_t>(req->max_bytes, 4 << 20)));
  self->request(st.cfg.owner, st.cfg.request_timeout, fetch_atom::value, p.SerializeAsString())
      .then(
          [self, req, token](const std::string& bytes) {
            auto& st = self->state;
            if (st.fetching.erase(token) == 0) return;  // handed on when the owner was lost
            if (st.moved) return forward_fetch(self, req);
            proto::FeedPage page;
            if (!parse(bytes, &page)) return reply(self, req, {}, fetch_status::resync, "owner_unreachable");
            fetch_reply r;
            r.epoch = page.epoch();
            r.head = {page.head_epoch(), page.head_seq()};
            // That member does not see itself as the owner yet (views
            // converge within a gossip round): ask again, via the registry.
            if (page.status() == proto::FeedPage::RESYNC && page.reason() == "not_owner")
              return void(
                  self->delayed_send(self, std::chrono::milliseconds(100), actors::fetch_atom::value, req));
            if (page.status() == proto::FeedPage::RESYNC)
              return reply(self, req, std::move(r), fetch_status::resync, page.reason());
            if (req->probe) return reply(self, req, std::move(r), fetch_status::page);
            r.frames = frames_of(page);
            auto last = r.frames.empty() ? req->after->seq : r.frames.back()->seq;
            // Live from here only when this relay's feed has reached that
            // far (the feed is contiguous, so nothing falls in between);
            // otherwise one more fetch, served from the ring.
            bool caught_up = st.open && r.epoch == st.epoch && last >= st.head;
            reply(self, req, std::move(r), caught_up ? fetch_status::caught_up : fetch_status::page);
          },
          [self, req, token](caf::error& err) {
            if (self->state.fetching.erase(token) == 0) return;
            if (self->state.moved) return forward_fetch(self, req);
            logging::warn("relay.fetch_failed", {{"stream", self->state.cfg.stream.name},
                                                 {"owner", self->state.cfg.owner_id},
                                                 {"error", self->system().render(err)}});
            reply(self, req, {}, fetch_status::resync, "owner_unreachable");
          });
}

void on_fetch(self_ptr self, const actors::fetch_request_ptr& req) {
  auto& st = self->state;
  if (st.moved) return forward_fetch(self, req);
  if (!st.open) {
    st.waiting.push_back(req);
    return;
  }
  fetch_reply r;
  r.epoch = st.epoch;
  r.head = head_cursor(st);
  // A new session's hello shows the owner's head, not this relay's (which
  // may lag the owner by one batch): what a publisher has had acknowledged
  // is never shown as still to come.
  if (!req->after && req->probe) return fetch_from_owner(self, req);
  if (!req->after) return reply(self, req, std::move(r), fetch_status::caught_up);
  auto after = *req->after;
  if (req->probe || after.seq > st.head) return fetch_from_owner(self, req);
  if (st.epoch == 0) {
    if (after.epoch != 0 || after.seq != 0) return fetch_from_owner(self, req);
    return reply(self, req, std::move(r), fetch_status::caught_up);
  }
  if (after.epoch == 0 && after.seq == 0) after.epoch = st.epoch;
  if (after.epoch != st.epoch) return fetch_from_owner(self, req);
  if (after.seq == st.head) return reply(self, req, std::move(r), fetch_status::caught_up);
  if (st.ring.empty() || st.ring.front()->seq > after.seq + 1) return fetch_from_owner(self, req);
  std::size_t bytes = 0;
  auto max = std::max<std::size_t>(req->max_frames, 1);
  for (auto i = after.seq + 1 - st.ring.front()->seq; i < st.ring.size(); ++i) {
    if (r.frames.size() >= max || (!r.frames.empty() && bytes >= req->max_bytes)) break;
    bytes += st.ring[i]->bytes.size();
    r.frames.push_back(st.ring[i]);
  }
  auto last = r.frames.back()->seq;
  reply(self, req, std::move(r), last == st.head ? fetch_status::caught_up : fetch_status::page);
}

// Every sink fetches again from its cursor, through the registry: used when
// this relay can no longer vouch for what it has (the stream's epoch
// changed under it, or it is moving).
void release_sinks(self_ptr self) {
  auto& st = self->state;
  for (auto& [raw, sink] : st.sinks) sink.first->moved(st.cfg.stream, self->address());
  st.sinks.clear();
}

void on_page(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  if (st.moved) return;
  proto::FeedPage page;
  if (!parse(bytes, &page)) {
    logging::warn("relay.bad_page", {{"stream", st.cfg.stream.name}, {"owner", st.cfg.owner_id}});
    return;
  }
  if (page.status() == proto::FeedPage::RESYNC) {
    // The owner's hub moved on (it no longer owns the stream); this node's
    // own reroute will replace the relay. Until then, reopen.
    logging::info("relay.feed_ended", {{"stream", st.cfg.stream.name}, {"reason", page.reason()}});
    st.open = false;
    release_sinks(self);
    st.ring.clear();
    // Not at once: the two nodes' views may differ for a gossip round.
    st.reopen_attempt = ++st.attempt;
    self->delayed_send(self, std::chrono::milliseconds(200), retry_atom::value, st.reopen_attempt);
    return;
  }
  if (!st.open) {
    // The owner's head when the feed registered: live from there.
    st.open = true;
    st.epoch = page.head_epoch();
    st.head = page.head_seq();
    logging::debug("relay.open", {{"stream", st.cfg.stream.name},
                                  {"owner", st.cfg.owner_id},
                                  {"head", core::format_cursor(head_cursor(st))}});
    std::vector<actors::fetch_request_ptr> waiting;
    waiting.swap(st.waiting);
    for (auto& req : waiting) on_fetch(self, req);
    if (page.status() != proto::FeedPage::LIVE) return;
  }
  auto frames = frames_of(page);
  if (frames.empty()) return;
  if (page.epoch() != st.epoch) {
    if (st.epoch != 0) {
      // A stream recreated at its owner: cursors of the old epoch are void.
      release_sinks(self);
      st.ring.clear();
    }
    st.epoch = page.epoch();
    st.head = frames.front()->seq - 1;
  }
  if (frames.front()->seq != st.head + 1) {
    // A gap in a feed cannot happen on one connection; reopen rather than
    // deliver one.
    logging::warn("relay.feed_gap",
                  {{"stream", st.cfg.stream.name}, {"head", st.head}, {"first", frames.front()->seq}});
    st.open = false;
    release_sinks(self);
    st.ring.clear();
    return open_feed(self);
  }
  st.head = frames.back()->seq;
  for (auto& f : frames) st.ring.push_back(f);
  while (st.ring.size() > st.cfg.ring_events) st.ring.pop_front();
  auto batch = std::make_shared<actors::frame_batch>();
  batch->stream = st.cfg.stream;
  batch->epoch = st.epoch;
  batch->frames = std::move(frames);
  batch->durable_at = std::chrono::steady_clock::now();
  actors::frame_batch_ptr shared = std::move(batch);
  for (auto& [raw, sink] : st.sinks) sink.first->deliver(shared);
}

void on_publish(self_ptr self, const actors::publish_request_ptr& req) {
  auto& st = self->state;
  if (st.moved) return caf::anon_send(st.cfg.registry->get(st.cfg.stream), actors::publish_atom::value, req);
  if (!req->progress.empty() || !req->snapshots.empty()) {
    // Watches and sources keep their streams on their own node (ADR 0015).
    return req->reply({actors::publish_outcome::unavailable, {}, "not the stream's owner"});
  }
  if (st.owner_lost)
    return req->reply({actors::publish_outcome::unavailable,
                       {},
                       "no connection to the stream's owner (node " + st.cfg.owner_id +
                           "); retry (with the same Idempotency-Key)"});
  auto token = st.next_request++;
  st.publishing.emplace(token, req);
  proto::PublishRequest p;
  p.set_tenant(st.cfg.stream.tenant);
  p.set_stream(st.cfg.stream.name);
  p.set_idempotency_key(req->idempotency_key);
  for (auto& e : req->events) {
    auto* w = p.add_events();
    w->set_path(e.path);
    w->set_type(e.type);
    w->set_data_json(e.data_json);
  }
  self->request(st.cfg.owner, st.cfg.request_timeout, publish_atom::value, p.SerializeAsString())
      .then(
          [self, req, token](const std::string& bytes) {
            if (self->state.publishing.erase(token) == 0) return;  // answered when the owner was lost
            proto::PublishReply r;
            if (!parse(bytes, &r))
              return req->reply(
                  {actors::publish_outcome::unavailable, {}, "the owner's reply was unreadable"});
            req->reply(from_proto(r));
          },
          [self, req, token](caf::error& err) {
            if (self->state.publishing.erase(token) == 0) return;
            // Unknown whether the owner stored it: the publisher retries
            // (with its Idempotency-Key, if it sent one).
            req->reply({actors::publish_outcome::uncertain,
                        {},
                        "the stream's owner (node " + self->state.cfg.owner_id +
                            ") did not answer: " + self->system().render(err)});
          });
}

void on_unsub(self_ptr self, const actors::fanout_sink_ptr& sink) {
  auto& sinks = self->state.sinks;
  auto it = sinks.find(sink.get());
  if (it == sinks.end()) return;
  if (--it->second.second == 0) sinks.erase(it);
}

void on_moved(self_ptr self) {
  auto& st = self->state;
  if (st.moved) return self->quit();
  st.moved = true;
  release_sinks(self);
  st.ring.clear();
  caf::anon_send(st.cfg.owner, close_atom::value, caf::actor_cast<caf::actor>(self), st.cfg.stream.tenant,
                 st.cfg.stream.name);
  for (auto& req : st.waiting) forward_fetch(self, req);
  st.waiting.clear();
  // Requests to the owner still in flight resolve (or time out) before this.
  self->delayed_send(self, std::chrono::seconds(60), actors::moved_atom::value);
}

// The open timer, or a reopen after the owner turned the feed away.
void on_retry(self_ptr self, std::uint64_t attempt) {
  auto& st = self->state;
  // A lost owner is followed by a move, which hands on what waits.
  if (st.open || st.moved || st.owner_lost || attempt != st.attempt) return;
  // A reopen after being turned away keeps its subscribers waiting; only
  // an open that found no answer at all gives up on them.
  if (attempt != st.reopen_attempt && !st.waiting.empty()) {
    logging::warn("relay.open_timeout", {{"stream", st.cfg.stream.name}, {"owner", st.cfg.owner_id}});
    std::vector<actors::fetch_request_ptr> waiting;
    waiting.swap(st.waiting);
    for (auto& req : waiting) reply(self, req, {}, fetch_status::resync, "owner_unreachable");
  }
  open_feed(self);
}

// The owner's node actor is down (its node was killed, hung past the
// heartbeat timeout, or cut off): what is out there will never be answered.
// Publishes hear "retry" at once (they may have been stored; a retry with
// the same Idempotency-Key finds out), fetches wait for the move that
// follows, which sends them to the stream's next owner.
void on_owner_down(self_ptr self) {
  auto& st = self->state;
  if (st.owner_lost || st.moved) return;
  st.owner_lost = true;
  logging::debug("relay.owner_lost", {{"stream", st.cfg.stream.name}, {"owner", st.cfg.owner_id}});
  std::map<std::uint64_t, actors::publish_request_ptr> publishing;
  publishing.swap(st.publishing);
  for (auto& [token, req] : publishing)
    req->reply({actors::publish_outcome::uncertain,
                {},
                "the stream's owner (node " + st.cfg.owner_id + ") was lost before it answered"});
  for (auto& [token, req] : st.fetching) st.waiting.push_back(req);
  st.fetching.clear();
}

}  // namespace

relay_actor::behavior_type relay(relay_actor::stateful_pointer<relay_state> self, relay_config cfg) {
  self->state.cfg = std::move(cfg);
  if (self->state.cfg.owner) {
    self->monitor(self->state.cfg.owner);
    self->set_down_handler([self](caf::down_msg&) { on_owner_down(self); });
    open_feed(self);
  } else {
    // The owner is a member this node has no connection to (yet): nothing
    // can go to it; fetches wait for the relay that replaces this one once
    // the connection is up (hub_registry::renew_relays).
    self->state.owner_lost = true;
  }
  return {
      [self](actors::publish_atom, const actors::publish_request_ptr& req) { on_publish(self, req); },
      [self](actors::fetch_atom, const actors::fetch_request_ptr& req) { on_fetch(self, req); },
      [self](actors::unsub_atom, const actors::fanout_sink_ptr& sink) { on_unsub(self, sink); },
      [self](actors::moved_atom) { on_moved(self); },
      [self](page_atom, const std::string& bytes) { on_page(self, bytes); },
      [self](retry_atom, std::uint64_t attempt) { on_retry(self, attempt); },
  };
}

}  // namespace tidings::cluster
