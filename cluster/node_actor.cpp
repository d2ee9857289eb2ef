#include "cluster/node_actor.hpp"

#include <algorithm>
#include <caf/io/all.hpp>
#include <caf/openssl/manager.hpp>
#include <nlohmann/json.hpp>

#include "cluster/atoms.hpp"
#include "cluster/peer_gate.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = node_actor*;

}  // namespace

// Membership changed (the agreed list, or a connection): placement, the
// relays and hubs that follow from it, and what this node's store holds
// for other owners goes to them.
void on_change(self_ptr self) {
  auto& st = self->state;
  auto m = std::make_shared<membership>();
  m->self_id = st.table.self().id;
  m->live = st.table.placement_ids();
  m->holders = st.table.live_ids();
  m->lost = st.table.lost_ids();
  auto members = std::make_shared<router_members>();
  members->emplace_back(m->self_id, caf::actor_cast<caf::actor>(self));
  for (auto& [id, handle] : st.handles)
    if (st.table.state(id) == member_state::up) {
      m->peers.emplace_back(*st.table.find(id), handle);
      members->emplace_back(id, handle);
    }
  auto moving = std::make_shared<mover_members>();
  moving->placement = m->live;
  for (const auto& id : m->holders) {
    if (id == m->self_id) continue;
    auto h = st.handles.find(id);
    moving->up[id] = {h == st.handles.end() ? caf::actor{} : h->second, st.table.find(id)->draining};
  }
  logging::info("cluster.members", {{"live", static_cast<std::uint64_t>(m->live.size())},
                                    {"connected", static_cast<std::uint64_t>(m->peers.size())},
                                    {"lost", static_cast<std::uint64_t>(m->lost.size())},
                                    {"member", st.table.is_member()}});
  st.cfg.view->update(std::move(m));
  // After the view: what they decide from these reads placement there.
  self->send(st.watch_router, members_atom::value, router_members_ptr(std::move(members)));
  self->send(st.watch_mover, members_atom::value, mover_members_ptr(std::move(moving)));
  st.cfg.hubs->reroute();
  st.cfg.view->follow_sources(true);
  rebalance(self);
  sync_pins(self);
  answer_if_settled(self);
}

void answer_if_settled(self_ptr self) {
  auto& st = self->state;
  if (st.settle_waiters.empty() || !settled(self)) return;
  for (auto& rp : st.settle_waiters) rp.deliver(true);
  st.settle_waiters.clear();
}

// How long a member waits for a member with a lower id to dial it.
caf::timespan dial_grace(const node_state& st) {
  return 2 * st.cfg.dial_interval;
}

// The members are listed and every one of them was dialled at least once,
// or had the time to dial this node.
bool settled(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  return st.listed && st.dialing.empty() &&
         std::all_of(st.awaited.begin(), st.awaited.end(),
                     [&](const auto& a) { return now - a.second >= dial_grace(st); });
}

namespace {

void dial(self_ptr self, const member& m);

// A connection to a listed member: its handle serves until the connection
// drops or the record names another life.
// `peer_asked`: the peer dialled us (its join), so it had lost its
// connection to us: whatever it fed our relays went with it, even where
// this side never saw the connection drop.
void add_peer(self_ptr self, const member& m, const caf::actor& handle, bool peer_asked) {
  auto& st = self->state;
  auto listed = st.table.find(m.id);
  if (m.id.empty() || m.id == st.table.self().id || !handle || !listed ||
      st.table.state(m.id) != member_state::up || listed->incarnation != m.incarnation ||
      listed->certificate != m.certificate)
    return;
  auto it = st.handles.find(m.id);
  if (it != st.handles.end() && it->second == handle) {
    if (peer_asked) {
      logging::debug("cluster.member_reconnected", {{"node", m.id}});
      st.cfg.hubs->renew_relays(m.id);
    }
    return;
  }
  if (it != st.handles.end()) {
    st.ids.erase(it->second.address());
    self->demonitor(it->second);
  }
  st.handles[m.id] = handle;
  st.ids[handle.address()] = m.id;
  st.awaited.erase(m.id);
  self->monitor(handle);
  logging::info("cluster.member_connected", {{"node", m.id}, {"address", m.cluster_address}});
  on_change(self);
  // Relays made while the owner had no connection hold no handle: anew,
  // now that the view has it (in this order, or one made in between would
  // hold none either).
  st.cfg.hubs->renew_relays(m.id);
}

void join_failed(self_ptr self, const member& expected, const std::string& error) {
  self->state.dialing.erase(expected.cluster_address);
  answer_if_settled(self);
  // A refusal by the other side's gate is news for the operator; a member
  // that is down or restarting is not.
  if (error.find("join refused") != std::string::npos)
    logging::warn("cluster.peer_refused",
                  {{"address", expected.cluster_address}, {"node", expected.id}, {"reason", error}});
  else
    logging::debug("cluster.join_failed", {{"address", expected.cluster_address}, {"error", error}});
}

// Through the peer's gate (ADR 0024): its proof first, then ours with this
// node's handle; the gate answers with its node's, on the same CAF node.
void join(self_ptr self, const caf::actor& gate, const member& expected) {
  auto& st = self->state;
  auto nonce = make_nonce();
  self->request(gate, st.cfg.connect_timeout, hello_atom::value, nonce)
      .then(
          [self, gate, expected, nonce](const std::string& hello) {
            auto& st = self->state;
            std::string why;
            auto join_bytes = answer_hello({*st.cfg.secret, to_proto(st.table.self()).SerializeAsString(),
                                            to_string(self->node()), st.cfg.tls.get()},
                                           nonce, hello, expected, to_string(gate->node()), &why);
            if (join_bytes.empty()) {
              logging::warn("cluster.peer_refused",
                            {{"address", expected.cluster_address}, {"node", expected.id}, {"reason", why}});
              return join_failed(self, expected, "unproven gate");
            }
            self->request(gate, st.cfg.connect_timeout, join_atom::value, caf::actor_cast<caf::actor>(self),
                          join_bytes)
                .then(
                    [self, gate, expected](const caf::actor& node, const std::string& bytes) {
                      self->state.dialing.erase(expected.cluster_address);
                      std::vector<member> members;
                      // The peer lists itself first: the one the record
                      // names, or someone else now on that address.
                      if (node && node->node() == gate->node() && decode_members(bytes, &members) &&
                          !members.empty() && members.front().id == expected.id)
                        add_peer(self, members.front(), node, false);
                      else
                        logging::warn("cluster.unexpected_peer", {{"address", expected.cluster_address}});
                      answer_if_settled(self);
                    },
                    [self, expected](caf::error& err) {
                      join_failed(self, expected, self->system().render(err));
                    });
          },
          [self, expected](caf::error& err) { join_failed(self, expected, self->system().render(err)); });
}

// Connecting goes through the middleman actor with a timeout: remote_actor()
// would block forever on a hung peer (STACK.md).
void dial(self_ptr self, const member& m) {
  auto& st = self->state;
  const auto& address = m.cluster_address;
  if (address.empty() || address == st.table.self().cluster_address || st.dialing.contains(address)) return;
  auto hp = split_address(address);
  if (!hp) return;
  st.dialing.insert(address);
  // With cluster TLS only the OpenSSL module's connections reach a member.
  auto connector = st.cfg.tls ? self->system().openssl_manager().actor_handle()
                              : self->system().middleman().actor_handle();
  self->request(connector, st.cfg.connect_timeout, caf::connect_atom::value, hp->first, hp->second)
      .then(
          [self, m](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
            if (!ptr) {
              self->state.dialing.erase(m.cluster_address);
              return answer_if_settled(self);
            }
            join(self, caf::actor_cast<caf::actor>(ptr), m);
          },
          [self, m](caf::error& err) {
            self->state.dialing.erase(m.cluster_address);
            answer_if_settled(self);
            logging::debug("cluster.dial_failed",
                           {{"address", m.cluster_address}, {"error", self->system().render(err)}});
          });
}

// Listed members without a connection (or with one to an earlier life).
// Of two members, the one with the lower id dials. Two that dial each
// other at once get a connection each way, and CAF routes each side over
// the one it dialled: each side's heartbeats then reach only the
// connection the other does not watch, and both are cut at the connection
// timeout (seen at start with cluster TLS, whose handshakes widen the
// window). The other dials too when none came for a while: a member may
// reach only one way.
void dial_unconnected(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  std::map<std::string, caf::actor_clock::time_point> awaited;
  for (const auto& m : st.table.others_up()) {
    if (st.handles.contains(m.id)) continue;
    if (m.id > st.table.self().id) {
      dial(self, m);
      continue;
    }
    auto since = st.awaited.contains(m.id) ? st.awaited[m.id] : now;
    awaited[m.id] = since;
    if (now - since >= dial_grace(st)) dial(self, m);
  }
  st.awaited = std::move(awaited);
}

void drop_handle(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto h = st.handles.find(id);
  if (h == st.handles.end()) return;
  st.ids.erase(h->second.address());
  self->demonitor(h->second);
  st.handles.erase(h);
}

// The agreed list: exactly these are members.
void on_agreed(self_ptr self, const agreed_members& list) {
  auto& st = self->state;
  auto before = st.table.live_ids();
  std::map<std::string, std::int64_t> lives;
  for (const auto& m : st.table.others_up()) lives[m.id] = m.incarnation;
  bool changed = st.table.set_agreed(list.members);
  bool first = !st.listed;
  st.listed = true;
  // Members that left the record are gone, whatever their connection says;
  // a new life of one is dialled afresh.
  for (const auto& id : before) {
    if (id == st.table.self().id) continue;
    auto now = st.table.find(id);
    bool gone = st.table.state(id) != member_state::up;
    bool new_life = !gone && now && lives.contains(id) && lives[id] != now->incarnation;
    if (!gone && !new_life) continue;
    drop_handle(self, id);
    if (!gone) continue;
    logging::warn("cluster.member_down", {{"node", id}});
    self->send(st.source_host, member_gone_atom::value, id);
    self->send(st.watch_mover, member_gone_atom::value, id);
    st.cfg.view->set_returned(id, {});
    if (st.cfg.view->set_pins(id, {})) st.cfg.hubs->reroute();
  }
  dial_unconnected(self);
  if (changed || first) on_change(self);
}

// This node's registration lapsed (or may have): until it is listed again
// it owns nothing, and no copy here counts as in sync.
void on_lapsed(self_ptr self, std::int64_t incarnation) {
  auto& st = self->state;
  auto me = st.table.self();
  me.incarnation = incarnation;
  st.table.set_self(me);
  st.table.lapse();
  self->send(st.replica_host, forget_atom::value);
  on_change(self);
}

void on_tick(self_ptr self) {
  auto& st = self->state;
  dial_unconnected(self);
  answer_if_settled(self);  // a grace that ran out, with nothing left to dial
  // Retries what a membership change could not finish at once. A peer
  // that had us down dropped our copies and pins: they go out again now
  // and then even when unchanged.
  st.cfg.view->follow_sources(false);
  bool again = ++st.ticks % 10 == 0;
  if (again) st.pins_sent.clear();
  sync_pins(self);
  // A joiner this node could not reach at the rebalance gets its sources
  // once it can.
  return_sources(self);
  self->send(st.watch_mover, tick_atom::value, again);
  self->delayed_send(self, st.cfg.dial_interval, tick_atom::value);
}

// A connection dropped: the member stays a member (the record decides),
// but nothing goes to it until it is dialled again.
void on_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (auto it = st.ids.find(dm.source); it != st.ids.end()) {
    auto id = it->second;
    st.ids.erase(it);
    if (auto h = st.handles.find(id); h != st.handles.end() && h->second.address() == dm.source)
      st.handles.erase(h);
    logging::warn("cluster.member_disconnected",
                  {{"node", id}, {"reason", self->system().render(dm.reason)}});
    on_change(self);
  }
}

// An owner's append, decoded here once; the replica host takes it on.
caf::result<std::string> on_replicate(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::ReplicaAppend a;
  proto::ReplicaReply refused;
  refused.set_status(proto::ReplicaReply::REFUSED);
  if (!parse(bytes, &a) || a.stream().empty()) {
    refused.set_error("unreadable append");
    return refused.SerializeAsString();
  }
  // Meant for an earlier life of this member (before its registration
  // lapsed): writes may have been acknowledged without it since, so
  // nothing from then may make a copy here in sync (ADR 0022).
  if (a.follower_incarnation() != st.table.self().incarnation || !st.table.is_member()) {
    refused.set_error("the append is for another life of this member");
    return refused.SerializeAsString();
  }
  return self->delegate(st.replica_host, replicate_atom::value,
                        std::make_shared<replica_append>(from_proto(std::move(a))));
}

// The owner no longer counts this node as a follower: answered (empty)
// once the copy is gone.
caf::result<std::string> on_release(self_ptr self, const std::string& bytes) {
  proto::ReplicaRelease r;
  if (!parse(bytes, &r) || r.stream().empty()) return std::string{};
  auto rp = self->make_response_promise<std::string>();
  self->request(self->state.replica_host, caf::infinite, release_atom::value, r.tenant(), r.stream())
      .then([rp](bool) mutable { rp.deliver(std::string{}); },
            [rp](caf::error&) mutable { rp.deliver(std::string{}); });
  return rp;
}

// This node's counts: its hubs, the watch copies it keeps, the feeds it
// serves, then its sessions, sources and watches, counted on their own
// threads (the answer is delivered back in here).
caf::result<std::string> on_stats(self_ptr self) {
  auto& st = self->state;
  auto rp = self->make_response_promise<std::string>();
  auto counts = std::make_shared<proto::NodeStats>();
  counts->set_id(st.table.self().id);
  counts->set_streams(st.cfg.hubs->hub_count());
  counts->set_relays(st.cfg.hubs->relay_count());
  auto count_local = [self, rp, counts]() mutable {
    auto& local = self->state.cfg.local_stats;
    if (!local) {
      rp.deliver(counts->SerializeAsString());
      return;
    }
    auto me = caf::actor_cast<caf::actor>(self);
    local([me, rp, counts](proto::NodeStats s) mutable {
      s.MergeFrom(*counts);  // no field in both
      caf::anon_send(
          me, actors::task_atom::value,
          actors::actor_task{[rp, bytes = s.SerializeAsString()]() mutable { rp.deliver(bytes); }});
    });
  };
  auto count_feeds = [self, counts, count_local]() mutable {
    self->request(self->state.feed_server, self->state.cfg.request_timeout, stats_atom::value)
        .then(
            [counts, count_local](const served_feeds& feeds) mutable {
              for (const auto& [stream, nodes] : feeds) {
                auto* f = counts->add_feeds();
                f->set_tenant(stream.tenant);
                f->set_stream(stream.name);
                for (const auto& n : nodes) f->add_nodes(n);
              }
              count_local();
            },
            [count_local](caf::error&) mutable { count_local(); });
  };
  self->request(st.watch_mover, st.cfg.request_timeout, stats_atom::value)
      .then(
          [counts, count_feeds](std::uint64_t copies) mutable {
            counts->set_watch_copies(copies);
            count_feeds();
          },
          [count_feeds](caf::error&) mutable { count_feeds(); });
  return rp;
}

nlohmann::json stats_json(const proto::NodeStats& s) {
  auto feeds = nlohmann::json::array();
  for (auto& f : s.feeds())
    feeds.push_back({{"tenant", f.tenant()},
                     {"stream", f.stream()},
                     {"nodes", std::vector<std::string>(f.nodes().begin(), f.nodes().end())}});
  return {{"streams", s.streams()},   {"relays", s.relays()},     {"sources", s.sources()},
          {"watches", s.watches()},   {"sessions", s.sessions()}, {"watch_copies", s.watch_copies()},
          {"feeds", std::move(feeds)}};
}

// Every member the node knows of, with its counts where it answered in time.
caf::result<std::string> on_nodes(self_ptr self) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  struct gathering {
    caf::response_promise rp;
    nlohmann::json rows = nlohmann::json::array();
    std::size_t left = 0;
    void done() {
      if (--left == 0) rp.deliver(rows.dump());
    }
  };
  auto g = std::make_shared<gathering>();
  g->rp = rp;
  for (auto& m : st.table.all()) {
    bool is_self = m.id == st.table.self().id;
    auto up = st.table.state(m.id) == member_state::up;
    auto state = !up ? (is_self ? "lapsed" : "down") : m.draining ? "draining" : "alive";
    g->rows.push_back({{"id", m.id},
                       {"address", m.http_address},
                       {"cluster_address", m.cluster_address},
                       {"state", state},
                       {"connected", is_self || st.handles.contains(m.id)},
                       {"self", is_self}});
  }
  g->left = g->rows.size() + 1;  // +1: released below, after every request is out
  for (std::size_t i = 0; i < g->rows.size(); ++i) {
    auto id = g->rows[i]["id"].get<std::string>();
    caf::actor target;
    if (id == st.table.self().id) {
      target = caf::actor_cast<caf::actor>(self);
    } else if (auto h = st.handles.find(id); h != st.handles.end() && g->rows[i]["state"] != "down") {
      target = h->second;
    }
    if (!target) {
      g->done();
      continue;
    }
    self->request(target, std::chrono::seconds(1), stats_atom::value)
        .then(
            [g, i](const std::string& bytes) {
              proto::NodeStats s;
              if (parse(bytes, &s)) g->rows[i].update(stats_json(s));
              g->done();
            },
            [g, i](caf::error&) {
              g->rows[i]["unreachable"] = true;
              g->done();
            });
  }
  g->done();
  return caf::delegated<std::string>();
}

void on_start(self_ptr self, std::uint16_t port) {
  auto& st = self->state;
  auto me = st.table.self();
  if (auto hp = split_address(me.cluster_address); hp && hp->second == 0)
    me.cluster_address = hp->first + ":" + std::to_string(port);
  st.table.set_self(me);
  logging::info("cluster.listening", {{"address", me.cluster_address}, {"node", me.id}});
  registrar_config mc;
  mc.self = me;
  mc.prefix = st.cfg.prefix;
  mc.lease_seconds = st.cfg.lease_seconds;
  mc.plane = st.cfg.plane;
  mc.secret = st.cfg.secret;
  mc.security = st.cfg.security;
  mc.tls = st.cfg.tls;
  mc.listener = caf::actor_cast<caf::actor>(self);
  st.registrar = self->spawn<caf::linked>(registrar, std::move(mc));
  on_change(self);
  on_tick(self);
}

}  // namespace

std::optional<std::pair<std::string, std::uint16_t>> split_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return std::nullopt;
  auto host = address.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned long port = 0;
  for (auto c : address.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<unsigned long>(c - '0');
    if (port > 65535) return std::nullopt;
  }
  return std::make_pair(host, static_cast<std::uint16_t>(port));
}

caf::behavior node(node_actor* self, node_config cfg) {
  self->state.table = member_table(cfg.self);
  self->state.source_host = self->spawn<caf::linked>(source_host, cfg.sources);
  self->state.watch_router = self->spawn<caf::linked>(
      watch_router, watch_router_config{cfg.self.id, caf::actor_cast<caf::actor>(self), cfg.watches,
                                        [view = cfg.view](const std::string& tenant, const std::string& key) {
                                          return view->owner_of(tenant, key);
                                        }});
  self->state.watch_mover = self->spawn<caf::linked>(
      watch_mover, watch_mover_config{cfg.self.id, caf::actor_cast<caf::actor>(self), cfg.watches,
                                      [view = cfg.view](const std::string& tenant, const std::string& key) {
                                        return view->owner_of(tenant, key);
                                      }});
  self->state.replica_host = self->spawn<caf::linked>(
      replica_host,
      replica_host_config{cfg.self.id, cfg.hubs, cfg.store, cfg.committer, cfg.view, cfg.request_timeout});
  self->state.feed_server = self->spawn<caf::linked>(feed_server, feed_server_config{cfg.hubs, cfg.view});
  self->state.handoff = self->spawn<caf::linked>(
      handoff, handoff_config{cfg.self.id, caf::actor_cast<caf::actor>(self), cfg.hubs, cfg.store, cfg.view,
                              self->state.replica_host, cfg.request_timeout});
  self->state.cfg = std::move(cfg);
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  return {
      [self](start_atom, std::uint16_t port) { on_start(self, port); },
      [self](tick_atom) { on_tick(self); },
      [self](join_atom, const caf::actor& peer,
             const std::string& bytes) -> caf::result<caf::actor, std::string> {
        // Meant for this node's gate only, which checked the asker's proof
        // (a hand-made CAF message could still claim to come from it
        // without cluster TLS: then the port must stay private). The asker
        // dialled us from the record; we take its handle too when the
        // record lists that life of it.
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node())
          return caf::make_error(caf::sec::runtime_error, "join refused: not through this node's gate");
        proto::Member p;
        bool parsed = parse(bytes, &p);
        // With cluster TLS the gate checked the join's signature against
        // the certificate the join names: it must be the one the record
        // lists for that member, or this node's handle stays here.
        if (self->state.cfg.tls) {
          const auto& st = self->state;
          auto listed = parsed ? st.table.find(p.id()) : std::nullopt;
          if (!listed || st.table.state(p.id()) != member_state::up || listed->certificate != p.certificate())
            return caf::make_error(caf::sec::runtime_error, "join refused: the record lists no member " +
                                                                p.id() + " with this certificate");
        }
        if (parsed) add_peer(self, from_proto(p), peer, true);
        return {caf::actor_cast<caf::actor>(self), encode_members({self->state.table.self()})};
      },
      [self](agreed_atom, const agreed_members_ptr& list) {
        if (list) on_agreed(self, *list);
      },
      [self](lapsed_atom, std::int64_t incarnation) { on_lapsed(self, incarnation); },
      [self](draining_atom, const std::string& id, std::int64_t incarnation) {
        if (self->state.table.mark_draining(id, incarnation)) on_change(self);
      },
      [self](leave_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (!st.registrar) return true;
        auto rp = self->make_response_promise<bool>();
        self->request(st.registrar, std::chrono::seconds(2), leave_atom::value)
            .then([rp](bool) mutable { rp.deliver(true); }, [rp](caf::error&) mutable { rp.deliver(false); });
        return rp;
      },
      // Other members' publishes, pages and feeds of the streams this node owns.
      [self](publish_atom, const std::string& bytes) -> caf::result<std::string> {
        return self->delegate(self->state.feed_server, publish_atom::value, bytes);
      },
      [self](fetch_atom, const std::string& bytes) -> caf::result<std::string> {
        return self->delegate(self->state.feed_server, fetch_atom::value, bytes);
      },
      [self](open_atom, const caf::actor& relay, const std::string& node_id, const std::string& bytes) {
        self->send(self->state.feed_server, open_atom::value, relay, node_id, bytes);
      },
      [self](close_atom, const caf::actor& relay, const std::string&, const std::string&) {
        self->send(self->state.feed_server, close_atom::value, relay);
      },
      [self](stats_atom) { return on_stats(self); },
      [self](nodes_atom) { return on_nodes(self); },
      [self](force_atom, const std::string& tenant, const std::string& stream, bool accept_loss) {
        return on_force(self, {tenant, stream}, accept_loss);
      },
      // A hub of this node takes a stream over; the other members' takes
      // and the new owners' word that a log is durable.
      [self](pull_atom, const std::string& tenant, const std::string& stream,
             const actors::hub_handoff_actor& hub) {
        self->send(self->state.handoff, pull_atom::value, tenant, stream, hub);
      },
      [self](take_atom, const std::string& bytes) { return on_take(self, bytes); },
      [self](taken_atom, const std::string& tenant, const std::string& stream, std::uint64_t epoch) {
        self->send(self->state.handoff, taken_atom::value, tenant, stream, epoch);
      },
      [self](adopt_atom, const std::string& tenant, const std::string& stream, std::uint64_t term) {
        // The hub pulls the log when it is new; one that runs already
        // checks it is not older than the sender's (ADR 0017).
        auto& st = self->state;
        auto hub = st.cfg.hubs->own_hub({tenant, stream});  // null: relayed from its owner
        if (auto it = st.ids.find(caf::actor_cast<caf::actor_addr>(self->current_sender()));
            hub && it != st.ids.end())
          caf::anon_send(hub, actors::check_term_atom::value, term, it->second);
      },
      [self](replicate_atom, const std::string& bytes) { return on_replicate(self, bytes); },
      [self](release_atom, const std::string& bytes) { return on_release(self, bytes); },
      [self](rebalance_atom, std::uint64_t generation) { on_rebalance(self, generation); },
      [self](read_atom, const std::string& bytes) { return on_read(self, bytes); },
      [self](drain_atom) { return on_drain(self); },
      [self](settled_atom) -> caf::result<bool> {
        if (settled(self)) return true;
        auto rp = self->make_response_promise();
        self->state.settle_waiters.push_back(rp);
        return rp;
      },
      [self](srcsub_atom, const std::string& bytes) -> caf::result<std::string> {
        return self->delegate(self->state.source_host, srcsub_atom::value, bytes);
      },
      [self](srcunsub_atom, std::uint64_t lease) {
        self->send(self->state.source_host, srcunsub_atom::value, lease);
      },
      // Watches across the members: the router's (this node's API and
      // the other members ask here).
      [self](wstart_atom, const std::string& bytes) -> caf::result<std::string> {
        return self->delegate(self->state.watch_router, wstart_atom::value, bytes);
      },
      [self](wstart_here_atom, const std::string& bytes) -> caf::result<std::string> {
        return self->delegate(self->state.watch_router, wstart_here_atom::value, bytes);
      },
      [self](wlist_atom, const std::string& tenant) -> caf::result<std::string> {
        return self->delegate(self->state.watch_router, wlist_atom::value, tenant);
      },
      [self](wlist_here_atom, const std::string& tenant) -> caf::result<std::string> {
        return self->delegate(self->state.watch_router, wlist_here_atom::value, tenant);
      },
      [self](wstop_atom, const std::string& tenant, const std::string& name) -> caf::result<std::string> {
        return self->delegate(self->state.watch_router, wstop_atom::value, tenant, name);
      },
      [self](wstop_here_atom, const std::string& tenant,
             const std::string& name) -> caf::result<std::string> {
        return self->delegate(self->state.watch_router, wstop_here_atom::value, tenant, name);
      },
      // The other members get the copies and pins at once, not at the next tick.
      [self](watches_changed_atom) { self->send(self->state.watch_mover, tick_atom::value, false); },
      [self](pins_due_atom) { sync_pins(self); },
      // A stop reaches every member: a lost member's copy of it must not
      // bring it back later.
      [self](stopping_atom, const std::string& tenant, const std::string& name) -> caf::result<bool> {
        return self->delegate(self->state.watch_mover, stopping_atom::value, tenant, name);
      },
      [self](wcopy_atom, const std::string& bytes) {
        self->send(self->state.watch_mover, wcopy_atom::value, bytes);
      },
      [self](restore_watches_atom) { self->send(self->state.watch_mover, restore_watches_atom::value); },
      [self](pins_atom, const std::string& bytes) { on_peer_pins(self, bytes); },
      [self](actors::task_atom, const actors::actor_task& task) {
        if (task.run) task.run();
      },
  };
}

}  // namespace tidings::cluster
