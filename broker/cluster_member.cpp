#include "broker/cluster_member.hpp"

#include <caf/io/all.hpp>
#include <charconv>

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::broker {

void configure_cluster(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(200)});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(1)});
}

cluster_member::cluster_member(caf::actor_system& system, std::unique_ptr<cluster::cluster_view> view)
    : system_(system), view_(std::move(view)) {}

cluster_member::~cluster_member() {
  stop();
}

std::unique_ptr<cluster_member> cluster_member::start(
    caf::actor_system& system, const config& cfg, identity who, actors::hub_registry& hubs,
    actors::source_registry_actor sources, persistence::store& store, persistence::group_committer& committer,
    std::function<void(std::function<void(local_node_counts)>)> counts, std::string* error) {
  auto listen = cluster::split_address(*cfg.cluster_listen);
  if (!listen) {
    *error = "cluster-listen: must be HOST:PORT";
    return nullptr;
  }
  auto view = std::make_unique<cluster::cluster_view>(system, who.node_id, hubs, cfg.ring_events);
  cluster::node_config ncfg;
  ncfg.self = {who.node_id, cfg.cluster_advertise.empty() ? *cfg.cluster_listen : cfg.cluster_advertise,
               who.http_address, who.incarnation, false};
  ncfg.seeds = cfg.seeds;
  ncfg.hubs = &hubs;
  ncfg.sources = std::move(sources);
  ncfg.store = &store;
  ncfg.committer = &committer;
  ncfg.view = view.get();
  ncfg.local_stats = [counts = std::move(counts)](std::function<void(proto::NodeStats)> done) {
    counts([done = std::move(done)](const local_node_counts& c) {
      proto::NodeStats s;
      s.set_sources(c.sources);
      s.set_watches(c.watches);
      s.set_sessions(c.sessions);
      done(std::move(s));
    });
  };
  std::unique_ptr<cluster_member> member(new cluster_member(system, std::move(view)));
  member->hubs_ = &hubs;
  hubs.set_router(member->view_.get());
  member->node_ = system.spawn(cluster::node, std::move(ncfg));
  auto port = system.middleman().publish(member->node_, listen->second, listen->first.c_str(), true);
  if (!port) {
    *error = "cluster-listen " + *cfg.cluster_listen + ": " + system.render(port.error());
    hubs.set_router(nullptr);
    caf::anon_send_exit(member->node_, caf::exit_reason::user_shutdown);
    member->node_ = nullptr;
    return nullptr;
  }
  member->view_->set_node(member->node_);
  caf::anon_send(member->node_, cluster::start_atom::value, *port);
  return member;
}

cluster_hooks cluster_member::hooks() {
  cluster_hooks h;
  auto* view = view_.get();
  h.owner_of = [view, hubs = hubs_](const std::string& tenant, const std::string& stream) {
    if (hubs->pinned({tenant, stream})) return std::string{};
    return view->owner_of(tenant, stream);
  };
  h.read = [this](const std::string& tenant, const std::string& stream, std::uint64_t after_seq,
                  std::size_t max, std::function<void(remote_log)> done) {
    read(tenant, stream, after_seq, max, std::move(done));
  };
  h.nodes = [this](std::function<void(std::optional<std::string>)> reply) { nodes(std::move(reply)); };
  return h;
}

void cluster_member::read(const std::string& tenant, const std::string& stream, std::uint64_t after_seq,
                          std::size_t max, std::function<void(remote_log)> done) {
  auto m = view_->current();
  auto owner = view_->owner_of(tenant, stream);
  caf::actor target;
  for (auto& [peer, handle] : m->peers)
    if (peer.id == owner) target = handle;
  if (!target) return done({});
  proto::ReadRequest req;
  req.set_tenant(tenant);
  req.set_stream(stream);
  req.set_after_seq(after_seq);
  req.set_max_events(static_cast<std::uint32_t>(max));
  system_.spawn([target, tenant, stream, bytes = req.SerializeAsString(),
                 done = std::move(done)](caf::event_based_actor* self) {
    self->request(target, std::chrono::seconds(3), cluster::read_atom::value, bytes)
        .then(
            [done, tenant, stream](const std::string& reply) {
              proto::TakeReply r;
              remote_log log;
              if (!r.ParseFromString(reply)) return done(log);
              log.reached = true;
              if (r.status() == proto::TakeReply::LOG) {
                persistence::stream_meta m;
                m.tenant = tenant;
                m.name = stream;
                m.epoch = r.epoch();
                m.first_seq = r.first_seq();
                m.head_seq = r.head_seq();
                m.retention_count = r.retention_count();
                m.retention_age_ms = r.retention_age_ms();
                m.created_ms = r.created_ms();
                log.meta = m;
                for (auto& e : r.events())
                  log.events.push_back(
                      {e.seq(), core::event{e.path(), e.type(), e.data_json(), e.time_ms()}});
              } else if (r.status() == proto::TakeReply::RETRY) {
                log.reached = false;
              }
              done(std::move(log));
            },
            [done](caf::error&) { done({}); });
  });
}

void cluster_member::nodes(std::function<void(std::optional<std::string>)> reply) {
  if (!node_) return reply(std::nullopt);
  // A short-lived actor makes the request, so no I/O thread blocks on it.
  system_.spawn([node = node_, reply = std::move(reply)](caf::event_based_actor* self) {
    self->request(node, std::chrono::seconds(3), cluster::nodes_atom::value)
        .then([reply](const std::string& rows) { reply(rows); },
              [reply](caf::error&) { reply(std::nullopt); });
  });
}

bool cluster_member::await_settled(std::chrono::milliseconds timeout) {
  bool ok = false;
  caf::scoped_actor self{system_};
  self->request(node_, timeout, cluster::settled_atom::value)
      .receive([&ok](bool) { ok = true; }, [](caf::error&) {});
  return ok;
}

std::size_t cluster_member::drain() {
  if (!node_) return 0;
  // Streams not taken (the reply is their count); all of them if no reply.
  std::size_t left = SIZE_MAX;
  caf::scoped_actor self{system_};
  self->request(node_, std::chrono::seconds(20), cluster::drain_atom::value)
      .receive(
          [&left](const std::string& n) {
            std::size_t v = 0;
            auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
            if (ec == std::errc() && p == n.data() + n.size()) left = v;
          },
          [](caf::error&) {});
  return left;
}

std::string cluster_member::reconnect_url() const {
  auto m = view_->current();
  for (auto& [peer, handle] : m->peers)
    if (!peer.draining && !peer.http_address.empty()) return "http://" + peer.http_address;
  return {};
}

void cluster_member::stop() {
  if (!node_) return;
  caf::anon_send_exit(node_, caf::exit_reason::user_shutdown);
  node_ = nullptr;
}

}  // namespace tidings::broker
