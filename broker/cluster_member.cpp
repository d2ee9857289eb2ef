#include "broker/cluster_member.hpp"

#include "broker/tenant_config.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <charconv>
#include <nlohmann/json.hpp>

#include "cluster/ask.hpp"
#include "cluster/atoms.hpp"
#include "cluster/etcd_control_plane.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/peer_gate.hpp"
#include "cluster/record_keeper.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::broker {

std::unique_ptr<cluster::frozen_tls_files> configure_cluster(caf::actor_system_config& cfg, const config& c,
                                                             std::string* error) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(200)});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(1)});
  if (!c.cluster_tls) return nullptr;
  auto files = cluster::frozen_tls_files::freeze(*c.cluster_tls, error);
  if (!files) return nullptr;
  // Setting any of these turns on CAF's certificate checks on both ends
  // (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT); without them it
  // would use anonymous ciphers.
  cfg.openssl_cafile = files->ca_path();
  cfg.openssl_certificate = files->cert_path();
  cfg.openssl_key = files->key_path();
  cfg.load<caf::openssl::manager>();
  return files;
}

cluster_member::cluster_member(caf::actor_system& system, std::unique_ptr<cluster::cluster_view> view)
    : system_(system), view_(std::move(view)) {}

cluster_member::~cluster_member() {
  stop();
}

std::unique_ptr<cluster_member> cluster_member::start(
    caf::actor_system& system, const config& cfg, const identity& who, actors::hub_registry& hubs,
    actors::source_registry_actor sources, actors::watch_manager_actor watches, persistence::store& store,
    persistence::group_committer& committer,
    std::function<void(std::function<void(local_node_counts)>)> counts, std::string* error) {
  auto listen = cluster::split_address(*cfg.cluster_listen);
  if (!listen) {
    *error = "cluster-listen: must be HOST:PORT";
    return nullptr;
  }
  auto view = std::make_unique<cluster::cluster_view>(system, who.node_id, hubs, cfg.ring_events);
  view->set_sources(sources);
  view->set_store(&store);
  view->set_replication_settings(
      {cfg.replication_factor, cfg.write_quorum, min_insync(cfg), cfg.replica_lag});
  cluster::node_config ncfg;
  ncfg.self = {who.node_id,
               cfg.cluster_advertise.empty() ? *cfg.cluster_listen : cfg.cluster_advertise,
               who.http_address,
               who.incarnation,
               false,
               cfg.cluster_tls ? cfg.cluster_tls->der() : ""};
  ncfg.tls = cfg.cluster_tls;
  // A watch silent for three lease terms is replaced: a member of etcd cut
  // off from the others would otherwise leave it waiting forever.
  auto lease = std::chrono::seconds(cfg.member_lease_seconds);
  auto plane = std::make_shared<cluster::etcd_control_plane>(
      cfg.etcd_endpoints,
      std::chrono::milliseconds(std::max<std::int64_t>(1000, cfg.member_lease_seconds * 400)),
      std::chrono::duration_cast<std::chrono::milliseconds>(3 * lease), cfg.etcd_tls_context);
  ncfg.plane = plane;
  static_assert(cluster_secret_min_bytes == cluster::min_secret_bytes);
  auto secret = std::make_shared<const cluster::cluster_secret>(cfg.cluster_secret);
  ncfg.secret = secret;
  // As configured at start: a reload's tenants are not compared (docs/cluster.md).
  // Members run cluster TLS, or none does: a node without it could reach
  // none of them. (Not the CA itself: a record whose certificate another CA
  // signed is refused anyway, and a bundle of the old and the new CA lets
  // the CA be rotated one node at a time.)
  auto security = security_description(cfg.tenants);
  if (cfg.cluster_tls) security += "\ncluster-tls";
  ncfg.security = secret->fingerprint(security);
  ncfg.prefix = cfg.etcd_prefix;
  ncfg.lease_seconds = cfg.member_lease_seconds;
  ncfg.hubs = &hubs;
  ncfg.sources = std::move(sources);
  ncfg.watches = std::move(watches);
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
  // The replicated streams' records (ADR 0021): every shipper and every
  // claim of a stream goes through this one keeper.
  auto records = system.spawn(cluster::record_keeper, cluster::record_keeper_config{plane, cfg.etcd_prefix});
  view->set_records(records);
  std::unique_ptr<cluster_member> member(new cluster_member(system, std::move(view)));
  member->plane_ = plane;
  member->hubs_ = &hubs;
  hubs.set_router(member->view_.get());
  member->node_ = system.spawn(cluster::node, std::move(ncfg));
  // Only the gate is published: the node actor goes to members that proved
  // they hold the secret (ADR 0024).
  cluster::peer_gate_config gate_cfg;
  gate_cfg.node = member->node_;
  gate_cfg.member_id = who.node_id;
  gate_cfg.secret = secret;
  gate_cfg.tls = cfg.cluster_tls;
  auto gate = system.spawn(cluster::peer_gate, std::move(gate_cfg));
  // Each ends with the other: a node nobody can join is no member.
  caf::actor_cast<caf::actor>(gate)->attach_functor(
      [node = caf::actor_addr(member->node_.address())](const caf::error&) {
        if (auto n = caf::actor_cast<caf::actor>(node))
          caf::anon_send_exit(n, caf::exit_reason::user_shutdown);
      });
  member->node_->attach_functor([gate, records](const caf::error&) {
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(records, caf::exit_reason::user_shutdown);
  });
  // With cluster TLS nothing is published on plain CAF: no port a process
  // without a certificate of the cluster CA could talk to.
  auto port = cfg.cluster_tls ? caf::openssl::publish(gate, listen->second, listen->first.c_str(), true)
                              : system.middleman().publish(gate, listen->second, listen->first.c_str(), true);
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
  h.force_leader = [this](const std::string& tenant, const std::string& stream, bool accept_loss,
                          std::function<void(std::optional<std::string>)> reply) {
    ask(std::chrono::seconds(25), caf::make_message(cluster::force_atom::value, tenant, stream, accept_loss),
        std::move(reply));
  };
  h.member = [view] {
    auto m = view->current();
    return std::find(m->holders.begin(), m->holders.end(), m->self_id) != m->holders.end();
  };
  h.replication = [view] {
    std::map<std::pair<std::string, std::string>, std::string> out;
    for (const auto& [key, info] : view->replication_rows()) {
      nlohmann::json row{{"role", info.role}, {"term", info.term}, {"head", info.head}};
      if (info.role == "owner") {
        row["acknowledged"] = info.acknowledged;
        auto followers = nlohmann::json::array();
        for (const auto& f : info.followers)
          followers.push_back({{"node", f.node}, {"state", f.state}, {"confirmed", f.confirmed}});
        row["followers"] = std::move(followers);
        if (!info.leader.empty())
          row["record"] = {{"leader", info.leader}, {"leader_epoch", info.leader_epoch}, {"isr", info.isr}};
      } else {
        row["owner"] = info.owner;
        row["in_sync"] = info.in_sync;
      }
      out[{key.tenant, key.name}] = row.dump();
    }
    return out;
  };
  h.start_watch = [this](const actors::watch_start_request_ptr& req) {
    auto p = cluster::to_proto(req->spec);
    p.set_max_watches(req->max_watches);
    ask(std::chrono::seconds(45), caf::make_message(cluster::wstart_atom::value, p.SerializeAsString()),
        [req](std::optional<std::string> reply) {
          proto::WatchStartReply r;
          actors::watch_start_reply out;
          if (!reply || !r.ParseFromString(*reply))
            out.error =
                actors::watch_error{actors::watch_error_kind::unavailable, "the cluster did not answer"};
          else if (!r.ok())
            out.error = actors::watch_error{static_cast<actors::watch_error_kind>(r.error_kind()), r.error()};
          out.shape = r.shape();
          out.replaced = r.replaced();
          req->reply(out);
        });
  };
  h.list_watches = [this](const actors::watch_list_request_ptr& req) {
    ask(std::chrono::seconds(5), caf::make_message(cluster::wlist_atom::value, req->tenant),
        [req](std::optional<std::string> reply) {
          proto::WatchList r;
          std::vector<actors::watch_info> out;
          if (reply && r.ParseFromString(*reply))
            for (auto& w : r.watches())
              out.push_back({w.name(), w.uri(), w.shape(), w.events(), w.notices(), w.filter_errors(),
                             w.state(), w.restore_failed(), w.error()});
          req->reply(out);
        });
  };
  h.stop_watch = [this](const actors::watch_stop_request_ptr& req) {
    ask(std::chrono::seconds(5), caf::make_message(cluster::wstop_atom::value, req->id.tenant, req->id.name),
        [req](std::optional<std::string> reply) {
          proto::WatchStopReply r;
          if (!reply || !r.ParseFromString(*reply))
            return req->reply(
                actors::watch_error{actors::watch_error_kind::unavailable, "the cluster did not answer"},
                false);
          if (!r.ok())
            return req->reply(
                actors::watch_error{static_cast<actors::watch_error_kind>(r.error_kind()), r.error()},
                r.stopped());
          req->reply(std::nullopt, r.stopped());
        });
  };
  return h;
}

void cluster_member::ask(std::chrono::milliseconds timeout, caf::message message,
                         std::function<void(std::optional<std::string>)> done) {
  cluster::ask(system_, node_, timeout, std::move(message), std::move(done));
}

void cluster_member::read(const std::string& tenant, const std::string& stream, std::uint64_t after_seq,
                          std::size_t max, std::function<void(remote_log)> done) {
  auto m = view_->current();
  auto owner = view_->owner_of(tenant, stream);
  auto target = m->node_of(owner);
  if (!target) return done({});
  proto::ReadRequest req;
  req.set_tenant(tenant);
  req.set_stream(stream);
  req.set_after_seq(after_seq);
  req.set_max_events(static_cast<std::uint32_t>(max));
  cluster::ask(system_, target, std::chrono::seconds(3),
               caf::make_message(cluster::read_atom::value, req.SerializeAsString()),
               [done = std::move(done), tenant, stream](std::optional<std::string> reply) {
                 proto::TakeReply r;
                 remote_log log;
                 if (!reply || !r.ParseFromString(*reply)) return done(log);
                 auto chunk = cluster::from_proto(std::move(r), {tenant, stream});
                 if (chunk.status == cluster::log_chunk::kind::retry) return done(log);
                 log.reached = true;
                 if (chunk.status == cluster::log_chunk::kind::log) {
                   log.meta = std::move(chunk.meta);
                   log.events = std::move(chunk.events);
                 }
                 done(std::move(log));
               });
}

void cluster_member::nodes(std::function<void(std::optional<std::string>)> reply) {
  ask(std::chrono::seconds(3), caf::make_message(cluster::nodes_atom::value), std::move(reply));
}

bool cluster_member::await_settled(std::chrono::milliseconds timeout) {
  bool ok = false;
  caf::scoped_actor self{system_};
  self->request(node_, timeout, cluster::settled_atom::value)
      .receive([&ok](bool) { ok = true; }, [](caf::error&) {});
  return ok;
}

void cluster_member::restore_watches() {
  caf::anon_send(node_, cluster::restore_watches_atom::value);
}

std::size_t cluster_member::drain() {
  if (!node_) return 0;
  // Streams not taken (the reply is their count); all of them if no reply.
  std::size_t left = SIZE_MAX;
  caf::scoped_actor self{system_};
  // Watches and sources move first (up to 8 s), then streams (up to 15 s).
  self->request(node_, std::chrono::seconds(25), cluster::drain_atom::value)
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
  // Leaving revokes the lease: the others see this node go at once rather
  // than a lease term later.
  caf::scoped_actor self{system_};
  self->request(node_, std::chrono::seconds(3), cluster::leave_atom::value)
      .receive([](bool) {}, [](caf::error&) {});
  caf::anon_send_exit(node_, caf::exit_reason::user_shutdown);
  node_ = nullptr;
  if (plane_) plane_->stop();
}

}  // namespace tidings::broker
