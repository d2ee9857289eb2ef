#include "sources/source_registry.hpp"

#include <algorithm>
#include <future>

#include <boost/asio/post.hpp>

#include "logging/log.hpp"
#include "sources/content_hash.hpp"
#include "sources/source_actor.hpp"

namespace tidings::sources {
namespace {

using self_ptr = actors::source_registry_actor::stateful_pointer<source_registry_state>;
using actors::watch_error;
using actors::watch_error_kind;

void post_back(const caf::actor_addr& weak, std::function<void()> fn) {
  if (auto strong = caf::actor_cast<actors::source_registry_actor>(weak))
    caf::anon_send(strong, actors::task_atom::value, actors::actor_task{std::move(fn)});
}

std::string table_key(const std::string& tenant, const std::string& key) {
  return tenant + '\0' + key;
}

void fail(const actors::source_subscribe_request_ptr& req, watch_error_kind kind, std::string message) {
  actors::source_subscribe_reply r;
  r.error = watch_error{kind, std::move(message)};
  req->reply(std::move(r));
}

source_registry_state::entry& spawn_source(self_ptr self, const std::string& tenant,
                                           const route_result& route) {
  auto& st = self->state;
  source_config cfg;
  cfg.tenant = tenant;
  cfg.uri = route.uri;
  cfg.key = route.key;
  cfg.stream = source_stream_name(route.key);
  cfg.upstreams = route.upstream;
  cfg.loop = st.cfg.loop;
  cfg.store = st.cfg.store;
  cfg.committer = st.cfg.committer;
  // The stream stays here while the source runs (its reads commit with its
  // snapshot in this node's store), whatever the cluster's placement says.
  st.cfg.hubs->pin({tenant, cfg.stream});
  st.cfg.hubs->get({tenant, cfg.stream});  // its claim starts with the source (ADR 0021)
  cfg.hub = [hubs = st.cfg.hubs, key = actors::stream_key{tenant, cfg.stream}] { return hubs->get(key); };
  if (!st.cfg.backoff.empty()) cfg.backoff = st.cfg.backoff;
  cfg.metrics = st.cfg.metrics;
  actors::source_info info;
  info.tenant = tenant;
  info.uri = route.uri;
  info.key = route.key;
  info.stream = cfg.stream;
  info.server = route.upstream->name();
  info.state = "starting";
  cfg.status = std::make_shared<source_status>(info);
  auto status = cfg.status;
  auto actor = self->spawn(source, std::move(cfg));
  self->monitor(actor);
  st.pinned[actor.address()] = {tenant, info.stream};
  logging::info("source.started", {{"uri", route.uri}, {"stream", info.stream}, {"upstream", info.server}});
  auto& e = st.sources[table_key(tenant, route.key)];
  e = source_registry_state::entry{actor, status, {}, 0};
  return e;
}

void close_entry(self_ptr self, const std::string& k) {
  auto& st = self->state;
  auto it = st.sources.find(k);
  if (it == st.sources.end()) return;
  self->send(it->second.actor, close_atom::value);
  st.closing[k] = it->second.actor.address();
  st.sources.erase(it);
}

void on_subscribe(self_ptr self, const actors::source_subscribe_request_ptr& req);

void on_routed(self_ptr self, const actors::source_subscribe_request_ptr& req, const route_result& route) {
  auto& st = self->state;
  if (st.stopping) return fail(req, watch_error_kind::unavailable, "the node is stopping");
  if (!route.upstream)
    return fail(req, route.transient ? watch_error_kind::unavailable : watch_error_kind::bad_request,
                route.error);
  // Routed before a reload took that connector out: route it again.
  if (st.retired.contains(route.upstream)) return on_subscribe(self, req);
  // Placed here by a member's view of placement (or by this node's, a
  // moment ago): run it only while this node's view agrees. The source pins
  // its stream here, and a hub pinned against this node's placement keeps
  // what the store has instead of pulling the log from the stream's last
  // holder: started before this node hears of a drain, it would begin the
  // stream again (a new epoch, every session resynced). The asker retries.
  if (auto* router = st.cfg.hubs->router();
      router && req->here && !router->owner({req->tenant, source_stream_name(route.key)}).empty())
    return fail(req, watch_error_kind::unavailable, "this node does not own the source's stream yet; retry");
  // In a cluster the source runs where its stream is owned; the answer
  // comes back to this thread like a local one.
  if (auto* router = st.cfg.hubs->router(); router && !req->here) {
    auto there = std::make_shared<actors::source_subscribe_request>();
    there->tenant = req->tenant;
    there->uri = req->uri;
    caf::actor_addr weak = self->address();
    there->reply = [weak, req](actors::source_subscribe_reply r) {
      auto shared = std::make_shared<actors::source_subscribe_reply>(std::move(r));
      post_back(weak, [req, shared] { req->reply(std::move(*shared)); });
    };
    if (router->subscribe_elsewhere(req->tenant, source_stream_name(route.key), there)) return;
  }
  if (st.handing_off) return fail(req, watch_error_kind::unavailable, "this node is draining; retry");
  auto k = table_key(req->tenant, route.key);
  if (st.closing.contains(k)) {
    st.after_close[k].push_back([self, req, route] { on_routed(self, req, route); });
    return;
  }
  auto it = st.sources.find(k);
  auto& e = it != st.sources.end() ? it->second : spawn_source(self, req->tenant, route);
  ++e.joining;
  auto actor = e.actor;
  caf::actor_addr weak = self->address();
  auto stream = e.status->get().stream;
  auto join = std::make_shared<source_join>([self, weak, req, k, actor, stream, key = route.key](
                                                const std::optional<watch_error>& error,
                                                const std::string& shape) {
    post_back(weak, [self, req, k, actor, stream, key, error, shape] {
      auto& st = self->state;
      auto it = st.sources.find(k);
      bool same = it != st.sources.end() && it->second.actor == actor;
      if (same) --it->second.joining;
      if (error) {
        if (same && it->second.leases.empty() && it->second.joining == 0) close_entry(self, k);
        return fail(req, error->kind, error->message);
      }
      if (!same) return fail(req, watch_error_kind::unavailable, "the source stopped while starting; retry");
      auto id = st.next_lease++;
      logging::debug("source.leased", {{"key", key}, {"lease", id}});
      it->second.leases.insert(id);
      st.leases[id] = k;
      it->second.status->update([&](actors::source_info& i) { i.subscribers = it->second.leases.size(); });
      actors::source_subscribe_reply r;
      r.stream = stream;
      r.key = key;
      r.shape = shape;
      r.lease = actors::make_source_lease(actors::source_registry_actor(self), id);
      // A subscriber of this node in a cluster: the lease follows the
      // source when it leaves for its placement owner.
      if (auto* router = st.cfg.hubs->router(); router && !req->here)
        r.lease = router->hold_here(req->tenant, req->uri, stream, std::move(r.lease));
      req->reply(std::move(r));
    });
  });
  self->send(actor, join_atom::value, source_join_ptr(std::move(join)));
}

void on_subscribe(self_ptr self, const actors::source_subscribe_request_ptr& req) {
  auto& st = self->state;
  if (st.stopping) return fail(req, watch_error_kind::unavailable, "the node is stopping");
  caf::actor_addr weak = self->address();
  auto* upstreams = st.cfg.upstreams;
  boost::asio::post(*st.cfg.loop, [self, weak, req, upstreams] {
    upstreams->ensure_started([self, weak, req, upstreams] {
      auto route = upstreams->route(req->uri);
      post_back(weak, [self, req, route] { on_routed(self, req, route); });
    });
  });
}

void on_unsubscribe(self_ptr self, std::uint64_t lease) {
  auto& st = self->state;
  logging::debug("source.released", {{"lease", lease}});
  auto l = st.leases.find(lease);
  if (l == st.leases.end()) return;  // its source already ended
  auto k = l->second;
  st.leases.erase(l);
  auto it = st.sources.find(k);
  if (it == st.sources.end()) return;
  it->second.leases.erase(lease);
  it->second.status->update([&](actors::source_info& i) { i.subscribers = it->second.leases.size(); });
  if (it->second.leases.empty() && it->second.joining == 0) {
    logging::info("source.stopping", {{"key", it->second.status->get().key}, {"reason", "no subscribers"}});
    close_entry(self, k);
  }
}

// --- reload --------------------------------------------------------------

// "<connector>|<canonical uri>" -> "<connector>".
std::string connector_of(const std::string& key) {
  return key.substr(0, key.find('|'));
}

bool names(const std::vector<std::string>& list, const std::string& key) {
  return std::find(list.begin(), list.end(), connector_of(key)) != list.end();
}

// Ends a source's subscribers the way a failed source does: an ERROR event
// with "source_failed" (every watch on it fails; SSE sessions see it). The
// source itself is down by then, so nothing follows the event.
void publish_ended(self_ptr self, const actors::source_info& info, const std::string& message) {
  auto& st = self->state;
  logging::error("source.failed", {{"uri", info.uri}, {"error", message}});
  if (st.cfg.metrics) st.cfg.metrics->failed(info.tenant, info.uri, message);
  auto req = std::make_shared<actors::publish_request>();
  req->events.push_back(source_failed_event(info.uri, message));
  req->reply = [](const actors::publish_result&) {};
  self->send(st.cfg.hubs->get({info.tenant, info.stream}), actors::publish_atom::value,
             actors::publish_request_ptr(std::move(req)));
}

// The leases of `all` still held (one released meanwhile stays released).
std::set<std::uint64_t> live_leases(self_ptr self, const std::string& k, const std::set<std::uint64_t>& all) {
  std::set<std::uint64_t> out;
  for (auto id : all)
    if (auto l = self->state.leases.find(id); l != self->state.leases.end() && l->second == k) out.insert(id);
  return out;
}

void drop_leases(self_ptr self, const std::set<std::uint64_t>& leases) {
  for (auto id : leases) self->state.leases.erase(id);
}

// The restarted source's first read: when it fails, its subscribers learn
// it like those of a removed upstream (nobody else waits for that read).
void await_restart(self_ptr self, const std::string& k, const source_actor& actor,
                   const actors::source_info& info) {
  caf::actor_addr weak = self->address();
  auto join = std::make_shared<source_join>(
      [self, weak, k, actor, info](const std::optional<watch_error>& error, const std::string&) {
        if (!error) return;
        post_back(weak, [self, k, actor, info, error] {
          auto& st = self->state;
          auto it = st.sources.find(k);
          if (it == st.sources.end() || it->second.actor != actor) return;  // closed or replaced since
          auto leases = it->second.leases;
          close_entry(self, k);
          drop_leases(self, leases);
          publish_ended(self, info,
                        "upstream " + connector_of(info.key) +
                            " was changed by a reload and its source did not start again: " + error->message);
        });
      });
  self->send(actor, join_atom::value, source_join_ptr(std::move(join)));
}

// The old source of a changed upstream is down: start one for the same key
// on the new connector, with the leases the old one had.
void respawn(self_ptr self, const std::string& k, const actors::source_info& info,
             const std::set<std::uint64_t>& leases, const route_result& route) {
  auto& st = self->state;
  auto live = live_leases(self, k, leases);
  if (st.stopping || st.handing_off) return drop_leases(self, live);
  if (live.empty()) return;  // every subscriber left meanwhile
  if (!route.upstream || route.key != info.key) {
    drop_leases(self, live);
    auto why = route.upstream ? "it goes to " + route.upstream->name() + " now" : route.error;
    return publish_ended(self, info,
                         "upstream " + connector_of(info.key) +
                             " was changed by a reload and no longer serves " + info.uri + ": " + why);
  }
  // A subscriber started (and closed) a source of this key meanwhile.
  if (st.closing.contains(k)) {
    st.after_close[k].push_back([self, k, info, live, route] { respawn(self, k, info, live, route); });
    return;
  }
  auto it = st.sources.find(k);
  bool started = it == st.sources.end();
  auto& e = started ? spawn_source(self, info.tenant, route) : it->second;
  e.leases.insert(live.begin(), live.end());
  e.status->update([&](actors::source_info& i) { i.subscribers = e.leases.size(); });
  logging::info("source.restarted", {{"key", info.key}, {"reason", "upstream changed by a reload"}});
  if (started) await_restart(self, k, e.actor, e.status->get());
}

void restart_source(self_ptr self, const std::string& k, const actors::source_info& info,
                    const std::set<std::uint64_t>& leases) {
  auto& st = self->state;
  if (st.stopping) return drop_leases(self, live_leases(self, k, leases));
  caf::actor_addr weak = self->address();
  auto* upstreams = st.cfg.upstreams;
  boost::asio::post(*st.cfg.loop, [self, weak, upstreams, k, info, leases] {
    upstreams->ensure_started([self, weak, upstreams, k, info, leases] {
      auto route = upstreams->route(info.uri);
      post_back(weak, [self, k, info, leases, route] { respawn(self, k, info, leases, route); });
    });
  });
}

void on_reload(self_ptr self, const actors::source_reload_request_ptr& req) {
  auto& st = self->state;
  st.retired.insert(req->retired.begin(), req->retired.end());
  auto affected = [&req](const std::string& key) {
    return names(req->removed, key) || names(req->changed, key);
  };
  // Counts the sources still to end; held by one while they are set up.
  auto pending = std::make_shared<std::size_t>(1);
  auto finish_one = [self, pending, req] {
    if (--*pending > 0) return;
    for (const auto* c : req->retired) self->state.retired.erase(c);
    if (req->done) req->done();
  };
  // Sources closing already (their last subscriber left) still hold an
  // upstream of the old connector until they are down.
  for (const auto& [k, addr] : st.closing)
    if (affected(k.substr(k.find('\0') + 1))) {
      ++*pending;
      st.after_close[k].push_back(finish_one);
    }
  std::vector<std::string> keys;
  for (const auto& [k, e] : st.sources)
    if (affected(e.status->get().key)) keys.push_back(k);
  for (const auto& k : keys) {
    auto& e = st.sources[k];
    auto info = e.status->get();
    auto leases = e.leases;
    bool removed = names(req->removed, info.key);
    logging::info("source.stopping",
                  {{"key", info.key},
                   {"reason", removed ? "upstream removed by a reload" : "upstream changed by a reload"}});
    ++*pending;
    close_entry(self, k);
    st.after_close[k].push_back([self, k, info, leases, removed, finish_one] {
      if (removed) {
        auto live = live_leases(self, k, leases);
        drop_leases(self, live);
        if (!self->state.stopping)
          publish_ended(self, info, "upstream " + connector_of(info.key) + " was removed by a reload");
      } else {
        restart_source(self, k, info, leases);
      }
      finish_one();
    });
  }
  finish_one();
}

// The source of (tenant, stream) leaves for its placement owner: its
// leases are void at once (their holds subscribe again there), and the
// answer (true) comes once it is down, after its stream is unpinned.
caf::result<bool> on_return(self_ptr self, const std::string& tenant, const std::string& stream) {
  auto& st = self->state;
  auto it = std::find_if(st.sources.begin(), st.sources.end(), [&](const auto& entry) {
    auto info = entry.second.status->get();
    return info.tenant == tenant && info.stream == stream;
  });
  if (it == st.sources.end()) return false;
  auto k = it->first;
  logging::info("source.stopping",
                {{"key", it->second.status->get().key}, {"reason", "moving to its owner"}});
  drop_leases(self, it->second.leases);
  close_entry(self, k);
  auto rp = self->make_response_promise<bool>();
  st.after_close[k].push_back([rp]() mutable { rp.deliver(true); });
  return rp;
}

// Handing off: the waiting tasks run once no source runs or closes.
void run_when_idle(self_ptr self) {
  auto& st = self->state;
  if (st.when_idle.empty() || !st.sources.empty() || !st.closing.empty()) return;
  auto tasks = std::move(st.when_idle);
  st.when_idle.clear();
  for (auto& t : tasks)
    if (t.run) t.run();
}

void on_down(self_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (auto p = st.pinned.find(msg.source); p != st.pinned.end()) {
    st.cfg.hubs->unpin(p->second);
    st.pinned.erase(p);
  }
  for (auto it = st.sources.begin(); it != st.sources.end(); ++it) {
    if (it->second.actor.address() != msg.source) continue;
    for (auto lease : it->second.leases) st.leases.erase(lease);
    st.sources.erase(it);
    break;
  }
  for (auto it = st.closing.begin(); it != st.closing.end(); ++it) {
    if (it->second != msg.source) continue;
    auto k = it->first;
    st.closing.erase(it);
    auto waiting = std::move(st.after_close[k]);
    st.after_close.erase(k);
    for (auto& w : waiting) w();
    break;
  }
  run_when_idle(self);
  // Stopping: done once every source has closed its upstream (each posts
  // its close before it ends, so the sources thread runs them before it
  // stops the connectors).
  if (st.stopping && st.sources.empty() && st.closing.empty()) self->quit();
}

}  // namespace

actors::source_registry_actor::behavior_type source_registry(
    actors::source_registry_actor::stateful_pointer<source_registry_state> self, source_registry_config cfg) {
  self->state.cfg = std::move(cfg);
  self->set_down_handler([self](caf::down_msg& msg) { on_down(self, msg); });
  return {
      [self](actors::source_sub_atom, const actors::source_subscribe_request_ptr& req) {
        on_subscribe(self, req);
      },
      [self](actors::source_unsub_atom, std::uint64_t lease) { on_unsubscribe(self, lease); },
      [self](actors::source_list_atom, const actors::source_list_request_ptr& req) {
        std::vector<actors::source_info> out;
        for (const auto& [k, e] : self->state.sources) {
          auto info = e.status->get();
          if (req->tenant.empty() || info.tenant == req->tenant) out.push_back(std::move(info));
        }
        req->reply(std::move(out));
      },
      [self](actors::task_atom, const actors::actor_task& task) {
        if (task.run) task.run();
      },
      [self](actors::source_reload_atom, const actors::source_reload_request_ptr& req) {
        on_reload(self, req);
      },
      [self](actors::source_handoff_atom, const actors::actor_task& then) {
        auto& st = self->state;
        st.handing_off = true;
        std::vector<std::string> keys;
        for (auto& [k, e] : st.sources) keys.push_back(k);
        for (auto& k : keys) {
          logging::info("source.stopping",
                        {{"key", st.sources[k].status->get().key}, {"reason", "node draining"}});
          drop_leases(self, st.sources[k].leases);
          close_entry(self, k);
        }
        st.when_idle.push_back(then);
        run_when_idle(self);
      },
      [self](actors::source_return_atom, const std::string& tenant, const std::string& stream) {
        return on_return(self, tenant, stream);
      },
      [self](actors::source_stop_atom) {
        auto& st = self->state;
        st.stopping = true;
        // Each source closes its upstream (unsubscribing upstream-side) as it ends.
        std::vector<std::string> keys;
        for (auto& [k, e] : st.sources) keys.push_back(k);
        for (auto& k : keys) close_entry(self, k);
        // Subscribes waiting for a close are answered "the node is stopping".
        auto waiting = std::move(st.after_close);
        st.after_close.clear();
        for (auto& [k, list] : waiting)
          for (auto& w : list) w();
        if (st.sources.empty() && st.closing.empty()) self->quit();
      },
  };
}

std::optional<std::string> reconfigure_upstreams(
    source_loop& loop, const actors::source_registry_actor& registry, const std::vector<std::string>& order,
    const source_loop::connector_factory& make, const std::vector<std::string>& removed,
    const std::vector<std::string>& changed, std::chrono::milliseconds timeout) {
  using retired_list = std::vector<std::unique_ptr<connector>>;
  // 1. The catalog, on the sources thread (where connectors are made and run).
  auto swapped = std::make_shared<std::promise<std::shared_ptr<retired_list>>>();
  auto swapped_done = swapped->get_future();
  boost::asio::post(loop.context(), [&loop, order, make, swapped] {
    auto old = loop.upstreams().reconfigure(order, make(loop.context()));
    swapped->set_value(std::make_shared<retired_list>(std::move(old)));
  });
  auto waited = " within " + std::to_string(timeout.count()) + " ms";
  if (swapped_done.wait_for(timeout) != std::future_status::ready)
    return "the sources thread did not take the new upstreams" + waited;
  auto old = swapped_done.get();
  // 2. Their sources end or restart; 3. then the old connectors stop.
  auto ended = std::make_shared<std::promise<void>>();
  auto ended_done = ended->get_future();
  auto req = std::make_shared<actors::source_reload_request>();
  req->removed = removed;
  req->changed = changed;
  for (const auto& c : *old) req->retired.push_back(c.get());
  req->done = [&loop, old, ended] {
    boost::asio::post(loop.context(), [old] {
      for (auto& c : *old) c->stop();
      old->clear();
    });
    ended->set_value();
  };
  caf::anon_send(registry, actors::source_reload_atom::value,
                 actors::source_reload_request_ptr(std::move(req)));
  if (ended_done.wait_for(timeout) != std::future_status::ready)
    return "the sources of the changed upstreams did not end" + waited;
  return std::nullopt;
}

}  // namespace tidings::sources
