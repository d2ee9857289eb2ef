#include "sources/source_registry.hpp"

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
  cfg.hub = st.cfg.hubs->get({tenant, cfg.stream});
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

void on_routed(self_ptr self, const actors::source_subscribe_request_ptr& req, const route_result& route) {
  auto& st = self->state;
  if (st.stopping) return fail(req, watch_error_kind::unavailable, "the node is stopping");
  if (!route.upstream)
    return fail(req, route.transient ? watch_error_kind::unavailable : watch_error_kind::bad_request,
                route.error);
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

void on_down(self_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
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

}  // namespace tidings::sources
