#include "cluster/feed_server.hpp"

#include "cluster/cluster_view.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = feed_server_actor::stateful_pointer<feed_server_state>;

bool owns(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  return st.cfg.view->owner_of(key.tenant, key.name).empty() || st.cfg.hubs->pinned(key);
}

// The request's answer comes from a hub, on the hub's thread, by token.
std::uint64_t wait_for_hub(self_ptr self, caf::typed_response_promise<std::string> rp) {
  auto token = self->state.next_token++;
  self->state.waiting.emplace(token, std::move(rp));
  return token;
}

std::string unavailable(const std::string& why) {
  return to_proto(actors::publish_result{actors::publish_outcome::unavailable, {}, why}).SerializeAsString();
}

caf::result<std::string> on_publish(self_ptr self, const std::string& bytes) {
  proto::PublishRequest p;
  if (!parse(bytes, &p) || p.stream().empty()) return unavailable("unreadable forwarded publish");
  if (!owns(self, {p.tenant(), p.stream()}))
    return unavailable("the stream is moving between nodes; retry (with the same Idempotency-Key)");
  auto rp = self->make_response_promise<std::string>();
  auto token = wait_for_hub(self, rp);
  auto req = publish_from_proto(p);
  auto me = caf::actor_cast<caf::actor>(self);
  req->reply = [me, token](const actors::publish_result& r) {
    caf::anon_send(me, done_atom::value, token, to_proto(r).SerializeAsString());
  };
  caf::anon_send(self->state.cfg.hubs->get({p.tenant(), p.stream()}), actors::publish_atom::value, req);
  return rp;
}

std::string resync_page(const std::string& reason) {
  proto::FeedPage page;
  page.set_status(proto::FeedPage::RESYNC);
  page.set_reason(reason);
  return page.SerializeAsString();
}

caf::result<std::string> on_fetch(self_ptr self, const std::string& bytes) {
  proto::FetchRequest p;
  if (!parse(bytes, &p)) return resync_page("bad_request");
  if (!owns(self, {p.tenant(), p.stream()})) return resync_page("not_owner");  // the relay asks again shortly
  auto rp = self->make_response_promise<std::string>();
  auto req = std::make_shared<actors::fetch_request>();
  req->sink = std::make_shared<one_fetch>(caf::actor_cast<caf::actor>(self), wait_for_hub(self, rp));
  // Without a cursor: the owner's head only (a new session's hello).
  if (p.has_after())
    req->after = core::cursor{p.after_epoch(), p.after_seq()};
  else
    req->probe = true;
  req->max_frames = std::max<std::uint32_t>(p.max_frames(), 1);
  req->max_bytes = std::max<std::uint32_t>(p.max_bytes(), 1);
  caf::anon_send(self->state.cfg.hubs->get({p.tenant(), p.stream()}), actors::fetch_atom::value, req);
  return rp;
}

void end_feed(self_ptr self, std::map<caf::actor_addr, feed_server_state::feed>::iterator it) {
  auto& st = self->state;
  caf::anon_send(st.cfg.hubs->get(it->second.stream), actors::unsub_atom::value,
                 actors::fanout_sink_ptr(it->second.sink));
  st.feeds.erase(it);
}

void on_open(self_ptr self, const caf::actor& relay, const std::string& node_id, const std::string& bytes) {
  auto& st = self->state;
  proto::FetchRequest p;
  if (!relay || !parse(bytes, &p) || p.stream().empty()) return;
  actors::stream_key key{p.tenant(), p.stream()};
  auto sink = std::make_shared<remote_feed>(relay);
  if (!owns(self, key)) return sink->moved(key, {});  // the relay tries again shortly
  if (auto old = st.feeds.find(relay.address()); old != st.feeds.end())
    end_feed(self, old);  // the relay reopens (a gap or a retry): its old feed goes
  else
    self->monitor(relay);
  st.feeds[relay.address()] = {node_id, key, sink};
  auto req = std::make_shared<actors::fetch_request>();
  req->sink = sink;
  caf::anon_send(st.cfg.hubs->get(key), actors::fetch_atom::value, req);
  logging::debug("cluster.feed_opened", {{"stream", key.name}, {"node", node_id}});
}

void on_close(self_ptr self, const caf::actor& relay) {
  auto it = self->state.feeds.find(relay.address());
  if (it == self->state.feeds.end()) return;
  self->demonitor(relay);
  end_feed(self, it);
}

served_feeds on_stats(self_ptr self) {
  served_feeds out;
  for (const auto& [relay, f] : self->state.feeds) out[f.stream].push_back(f.node);
  return out;
}

}  // namespace

feed_server_actor::behavior_type feed_server(feed_server_actor::stateful_pointer<feed_server_state> self,
                                             feed_server_config cfg) {
  self->state.cfg = cfg;
  // A relay that went away (its node too, or its connection) ends its feed.
  self->set_down_handler([self](caf::down_msg& dm) {
    if (auto it = self->state.feeds.find(dm.source); it != self->state.feeds.end()) end_feed(self, it);
  });
  return {
      [self](publish_atom, const std::string& bytes) { return on_publish(self, bytes); },
      [self](fetch_atom, const std::string& bytes) { return on_fetch(self, bytes); },
      [self](open_atom, const caf::actor& relay, const std::string& node_id, const std::string& bytes) {
        on_open(self, relay, node_id, bytes);
      },
      [self](close_atom, const caf::actor& relay) { on_close(self, relay); },
      [self](done_atom, std::uint64_t token, const std::string& bytes) {
        auto it = self->state.waiting.find(token);
        if (it == self->state.waiting.end()) return;
        it->second.deliver(bytes);
        self->state.waiting.erase(it);
      },
      [self](stats_atom) { return on_stats(self); },
  };
}

}  // namespace tidings::cluster
