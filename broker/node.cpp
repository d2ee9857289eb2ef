#include "broker/node.hpp"

#include <atomic>
#include <caf/all.hpp>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <tuple>

#include <unistd.h>

#include "actors/hub_registry.hpp"
#include "actors/watch_manager.hpp"
#include "broker/api.hpp"
#include "broker/audit_log.hpp"
#include "broker/auth_service.hpp"
#include "broker/cluster_member.hpp"
#include "broker/http_server.hpp"
#include "broker/metrics.hpp"
#include "broker/session_access.hpp"
#include "broker/usage_limits.hpp"
#include "logging/log.hpp"
#include "persistence/group_commit.hpp"
#include "relay/io_shard.hpp"
#include "sources/source_loop.hpp"
#include "sources/source_registry.hpp"

namespace tidings::broker {
namespace {

// Blocks SIGTERM, SIGINT and SIGHUP in this thread and every thread started after,
// so that only the main thread's sigwait sees them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);  // reload
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A write to a connection the peer reset must fail with EPIPE, not end
  // the process: OpenSSL's socket BIO (relay/tls_socket) writes with
  // write(2), which has no MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);
  return set;
}

nlohmann::json certificate_json(const net::tls_certificate_info& info) {
  return {{"subject", info.subject}, {"not_after", info.not_after}};
}

// Reads the HTTPS certificate and key again: what is in use now, and why a
// new one was refused ("" when it was not; the one in use then stays).
std::pair<nlohmann::json, std::string> reload_certificate(net::tls_server_keys& keys) {
  if (auto err = keys.load()) {
    logging::warn("node.reload_failed", {{"error", *err}, {"kept", "the certificate in use"}});
    return {{{"error", *err}}, *err};
  }
  auto info = keys.info();
  logging::info("http.tls_reloaded", {{"subject", info.subject}, {"not_after", info.not_after}});
  return {certificate_json(info), ""};
}

// Browsers refuse an expired certificate outright: say so at start, and
// two weeks before, while there is time to renew.
void warn_if_expiring(const net::tls_certificate_info& info) {
  using namespace std::chrono;
  auto left = seconds(info.not_after_unix) - duration_cast<seconds>(system_clock::now().time_since_epoch());
  if (left > hours(24 * 14)) return;
  logging::warn("http.tls_certificate_expiring",
                {{"subject", info.subject}, {"not_after", info.not_after}, {"expired", left <= seconds(0)}});
}

// A member whose certificate expires can neither dial nor be dialled, and
// renewing it takes a restart (ADR 0032): two weeks' notice.
void warn_if_expiring(const cluster::node_certificate& cert) {
  using namespace std::chrono;
  auto left = duration_cast<hours>(cert.not_after() - system_clock::now());
  if (left > hours(24 * 14)) return;
  logging::warn("node.cluster_certificate_expiring",
                {{"subject", cert.subject()}, {"hours_left", static_cast<std::int64_t>(left.count())}});
}

class drain_waiter {
 public:
  void notify() {
    std::lock_guard lock(mutex_);
    cv_.notify_all();
  }
  template <class Pred>
  bool wait(std::chrono::milliseconds timeout, Pred done) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, done);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Waits for every actor to end, but not forever: a watch filter stuck in a
// Lua C function (ADR 0008) cannot be interrupted. Everything accepted is
// written by now, so the process may end without it.
void await_actors(caf::actor_system& system) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread waiter([&system, done] {
    system.await_all_actors_done();
    done->set_value();
  });
  if (finished.wait_for(std::chrono::seconds(10)) == std::future_status::ready) {
    waiter.join();
    return;
  }
  logging::warn("node.stuck_actors", {{"waited_ms", std::int64_t{10000}}});
  waiter.detach();
  logging::info("node.stopped", {{"forced", true}});
  std::_Exit(0);
}

// A value made once, `words` x 8 random hex digits, and kept in the store
// (read with `get`, written with `put`), so a restart on the same data
// finds it again.
persistence::status kept_random_hex(
    const std::function<persistence::status(std::optional<std::string>*)>& get,
    const std::function<persistence::status(const std::string&)>& put, int words, std::string* out) {
  std::optional<std::string> kept;
  if (auto s = get(&kept); !s.ok()) return s;
  if (kept) {
    *out = *kept;
    return {};
  }
  std::random_device rd;
  std::string value;
  for (int i = 0; i < words; ++i) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
    value += hex;
  }
  if (auto s = put(value); !s.ok()) return s;
  *out = std::move(value);
  return {};
}

// The node's id (16 hex digits): a restart on the same data is the same node.
persistence::status node_id_of(persistence::store& store, std::string* out) {
  return kept_random_hex([&store](auto* v) { return store.get_node_id(v); },
                         [&store](const std::string& v) { return store.put_node_id(v); }, 2, out);
}

// What generated webhook tokens are derived from (ADR 0029): the cluster
// secret, which every member holds, else a key this node keeps in its store.
persistence::status webhook_token_key_of(persistence::store& store, const config& cfg, std::string* out) {
  if (!cfg.cluster_secret.empty()) {
    *out = cfg.cluster_secret;
    return {};
  }
  return kept_random_hex([&store](auto* v) { return store.get_webhook_token_key(v); },
                         [&store](const std::string& v) { return store.put_webhook_token_key(v); }, 8, out);
}

}  // namespace

int run_node(const config& cfg) {
  logging::set_levels(effective_log_levels(cfg));
  auto signals = block_stop_signals();

  if (auto err = compile_scopes(cfg.tenants)) {
    logging::error("node.config_invalid", {{"error", *err}});
    return 1;
  }
  std::unique_ptr<persistence::store> store;
  if (auto s = persistence::store::open(cfg.data_dir, cfg.durability, &store); !s.ok()) {
    logging::error("node.store_failed", {{"data_dir", cfg.data_dir}, {"error", s.message()}});
    return 1;
  }
  store->set_idempotency_ttl(cfg.idempotency_ttl);
  std::string node_id;
  if (auto s = node_id_of(*store, &node_id); !s.ok()) {
    logging::error("node.id_failed", {{"data_dir", cfg.data_dir}, {"error", s.message()}});
    return 1;
  }
  // The upstreams as this node runs them: the file's, with the token key.
  auto upstreams = cfg.upstreams;
  if (auto s = webhook_token_key_of(*store, cfg, &upstreams.web.token_key); !s.ok()) {
    logging::error("node.webhook_key_failed", {{"data_dir", cfg.data_dir}, {"error", s.message()}});
    return 1;
  }
  const auto started_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  audit_log audit(cfg.audit_log);
  if (!audit.ok()) logging::warn("node.audit_log_unwritable", {{"path", cfg.audit_log}});
  auth_service auth(cfg.tenants, *store);
  if (auto s = auth.load_revocations(); !s.ok()) {
    logging::error("node.revocations_unreadable", {{"error", s.message()}});
    return 1;
  }
  persistence::write_guard write_guard(cfg.storage_reserve_mb << 20,
                                       persistence::write_guard::free_space_of(cfg.data_dir));
  write_guard.on_change([](const persistence::write_guard::health& h) {
    using state = persistence::write_guard::state;
    if (h.now == state::writable)
      logging::info("storage.writable", {{"free_bytes", h.free_bytes}});
    else
      logging::error(
          h.now == state::full ? "storage.full" : "storage.failed",
          {{"reason", h.reason}, {"free_bytes", h.free_bytes}, {"reserve_bytes", h.reserve_bytes}});
  });
  persistence::group_committer committer(*store, std::chrono::milliseconds(5), &write_guard);
  // Probes count from the first event; watcher fires and source failures
  // also leave audit lines.
  metrics node_metrics(*store, [&audit](std::string_view event, const nlohmann::json& fields) {
    audit.record_upstream(event, fields);
  });
  node_metrics.set_write_guard(&write_guard);

  caf::actor_system_config caf_cfg;
  caf_cfg.set("scheduler.max-threads", 2);
  // Work sharing waits on a condition variable when idle; CAF's default
  // work stealing spins and naps (50 us sleeps) after every message, which
  // cost more CPU than the hubs' actual work.
  caf_cfg.set("scheduler.policy", caf::atom("sharing"));
  std::unique_ptr<cluster::frozen_tls_files> cluster_tls_files;
  if (cfg.cluster_listen) {
    std::string error;
    cluster_tls_files = configure_cluster(caf_cfg, cfg, &error);
    if (!error.empty()) {
      logging::error("node.cluster_tls_failed", {{"error", error}});
      return 1;
    }
    if (cfg.cluster_tls) {
      logging::info("node.cluster_tls", {{"subject", cfg.cluster_tls->subject()},
                                         {"ca_sha256", cfg.cluster_tls->ca_fingerprint()}});
      warn_if_expiring(*cfg.cluster_tls);
    }
  }
  caf::actor_system system{caf_cfg};
  {
    actors::hub_defaults defaults;
    defaults.retention = cfg.retention;
    defaults.ring_events = cfg.ring_events;
    defaults.max_unknown_streams = cfg.max_unknown_streams;
    defaults.idle_release = cfg.stream_idle;
    defaults.metrics = &node_metrics.hubs();
    actors::hub_registry hubs(system, *store, committer, defaults);

    drain_waiter waiter;
    std::vector<std::shared_ptr<relay::io_shard>> shards;
    for (std::size_t i = 0; i < cfg.io_threads; ++i) {
      shards.push_back(std::make_shared<relay::io_shard>(i, hubs, &node_metrics.relay()));
      shards.back()->on_idle([&waiter] { waiter.notify(); });
    }
    // Upstream sources: connectors on their own thread, one registry actor.
    sources::source_loop source_thread(
        [&upstreams](boost::asio::io_context& ioc) { return make_connectors(ioc, upstreams); });
    source_thread.start();
    sources::source_registry_config source_cfg;
    source_cfg.upstreams = &source_thread.upstreams();
    source_cfg.loop = &source_thread.context();
    source_cfg.store = store.get();
    source_cfg.committer = &committer;
    source_cfg.hubs = &hubs;
    source_cfg.metrics = &node_metrics.sources();
    for (auto wait = cfg.source_backoff; source_cfg.backoff.size() < 5; wait *= 2)
      source_cfg.backoff.push_back(wait);
    actors::source_registry_actor source_registry = system.spawn(sources::source_registry, source_cfg);
    // Sources end after the watches and sessions that hold them, and before
    // the committer: a source's last read may still be committing.
    auto end_sources = [&] {
      caf::scoped_actor self{system};
      self->send(source_registry, actors::source_stop_atom::value);
      self->wait_for(source_registry);
      source_thread.stop();
    };

    actors::watch_manager_config watch_cfg;
    watch_cfg.store = store.get();
    watch_cfg.committer = &committer;
    watch_cfg.hubs = &hubs;
    watch_cfg.limits = cfg.watches;
    watch_cfg.sources = source_registry;
    auto watches = system.spawn(actors::watch_manager, watch_cfg);

    // A revocation or reload reaches every live session within the second.
    auth.on_change([&shards] {
      for (auto& s : shards) s->recheck_sessions();
    });
    auto usage = std::make_shared<usage_limits>();
    // What the node runs now, for the next reload to compare with: the
    // upstreams change live. Reloads (SIGHUP, POST) take turns.
    auto reload = [&cfg, &auth, &source_thread, source_registry,
                   running =
                       [&] {
                         auto c = std::make_shared<config>(cfg);
                         c->upstreams = upstreams;
                         return c;
                       }(),
                   turn = std::make_shared<std::mutex>()]() -> std::pair<unsigned, nlohmann::json> {
      // The certificate and the config file are reloaded independently: a
      // half-written renewal must not hold back a revocation, nor a bad config
      // file a renewal. Each part's outcome is in the answer ("tls" holds the
      // certificate now in use, or why the new one was refused).
      nlohmann::json tls_result;
      std::string tls_error;
      auto failed = [&tls_result, &tls_error](
                        unsigned status, const std::string& error) -> std::pair<unsigned, nlohmann::json> {
        logging::warn("node.reload_failed", {{"error", error}});
        nlohmann::json body = {{"error", error}};
        if (!tls_result.is_null()) body["tls"] = tls_result;
        if (!tls_error.empty()) body["error"] = tls_error + "; " + error;
        return {status, body};
      };
      std::lock_guard lock(*turn);
      // The HTTPS certificate first: renewals (certbot's deploy hook) send
      // SIGHUP whether or not there is a config file.
      if (cfg.tls_keys) {
        std::tie(tls_result, tls_error) = reload_certificate(*cfg.tls_keys);
        if (cfg.config_path.empty()) {
          if (!tls_error.empty()) return {400, {{"error", tls_error}, {"tls", tls_result}}};
          return {200, {{"reloaded", true}, {"tls", tls_result}}};
        }
      }
      reload_plan plan;
      if (auto err = plan_reload(cfg.config_path, *running, &plan)) return failed(400, *err);
      if (auto err = compile_scopes(plan.tenants)) return failed(400, *err);
      if (auto err = auth.reload(std::move(plan.tenants))) return failed(409, *err);
      // Applied live too: log levels, webhook tokens, and the upstreams per connector.
      logging::set_levels(plan.log_levels);
      if (plan.webhook_tokens) post_webhook_tokens(source_thread, std::move(*plan.webhook_tokens));
      const auto& changes = plan.upstream_changes;
      running->upstreams = plan.upstreams;
      if (!changes.empty()) {
        std::set<std::string> make(changes.added.begin(), changes.added.end());
        make.insert(changes.changed.begin(), changes.changed.end());
        auto connectors = [fresh = plan.upstreams, make](boost::asio::io_context& ioc) {
          return make_connectors(ioc, fresh, make);
        };
        if (auto err = sources::reconfigure_upstreams(
                source_thread, source_registry, connector_names(plan.upstreams), connectors, changes.removed,
                changes.changed, std::chrono::seconds(10)))
          logging::warn("node.reload_slow", {{"error", *err}});
      }
      const auto& restart_needed = plan.restart_needed;
      logging::info("node.reloaded",
                    {{"restart_needed", static_cast<std::uint64_t>(restart_needed.size())},
                     {"upstreams_added", static_cast<std::uint64_t>(changes.added.size())},
                     {"upstreams_removed", static_cast<std::uint64_t>(changes.removed.size())},
                     {"upstreams_changed", static_cast<std::uint64_t>(changes.changed.size())}});
      nlohmann::json answer = {
          {"reloaded", tls_error.empty()},
          {"restart_needed", restart_needed},
          {"upstreams",
           {{"added", changes.added}, {"removed", changes.removed}, {"changed", changes.changed}}},
          {"log_level", logging::to_string(plan.log_levels)},
          {"tls", tls_result}};
      // The config applied but the certificate did not: 400, saying which.
      if (!tls_error.empty()) {
        answer["error"] = tls_error;
        return {400, answer};
      }
      return {200, answer};
    };
    api routes(hubs, watches, *store, cfg, source_thread, source_registry, {auth, *usage, audit, reload});
    routes.set_write_guard(&write_guard);
    routes.set_metrics(&node_metrics);
    http_limits limits{.max_header_bytes = cfg.max_header_bytes,
                       .max_body_bytes = cfg.max_body_bytes,
                       .max_header_count = cfg.max_header_count,
                       .idle_timeout = cfg.idle_timeout,
                       .header_timeout = cfg.header_timeout,
                       .max_connections = cfg.max_connections,
                       .max_connections_per_address = cfg.max_connections_per_address};
    http_server server(shards, routes, limits, cfg.sse);
    // Watches end first (without flushing: their stored positions let the
    // next start redo whatever was pending; ADR 0007).
    auto end_watches = [&] {
      caf::scoped_actor self{system};
      self->send(watches, actors::shutdown_atom::value);
      self->wait_for(watches);
    };
    // The node cannot start (nothing was served yet).
    auto give_up = [&] {
      end_watches();
      end_sources();
      for (auto& h : hubs.all()) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
      committer.stop();
      await_actors(system);
      return 1;
    };
    if (auto err = server.listen(cfg.listen_host, cfg.listen_port)) {
      logging::error("node.listen_failed", {{"error", *err}});
      return give_up();
    }
    auto address = host_port(cfg.listen_host, server.port());
    std::string tls_address;
    if (cfg.tls_keys) {
      const auto& at = *cfg.tls_listen;
      if (auto err = server.listen_tls(at.host, at.port, cfg.tls_keys)) {
        logging::error("node.listen_failed", {{"error", *err}});
        return give_up();
      }
      tls_address = host_port(at.host, server.tls_port());
      warn_if_expiring(cfg.tls_keys->info());
    }
    // POST /admin/v1/drain raises the SIGTERM this thread waits for below
    // (every thread blocks it, so only the sigwait sees it).
    // (The flag tells the log line below which it was: the signal is the same.)
    static std::atomic<bool> drain_from_api{false};
    routes.set_node({node_id, address, started_at_ms}, shards, [] {
      drain_from_api = true;
      ::kill(::getpid(), SIGTERM);
    });
    std::unique_ptr<cluster_member> cluster;
    if (cfg.cluster_listen) {
      std::string error;
      cluster = cluster_member::start(
          system, cfg, {node_id, cfg.advertise.empty() ? address : cfg.advertise, started_at_ms}, hubs,
          source_registry, watches, *store, committer,
          [&routes](std::function<void(local_node_counts)> done) { routes.local_counts(std::move(done)); },
          &error);
      if (!cluster) {
        logging::error("node.cluster_failed", {{"error", error}});
        return give_up();
      }
      routes.set_cluster(cluster->hooks());
      // Watches start their sources where the cluster places them: wait
      // (briefly) to be listed in etcd with the other members first, or
      // every source would start here.
      if (!cluster->await_settled(std::chrono::seconds(3)))
        logging::warn("node.cluster_unsettled", {{"waited_ms", std::int64_t{3000}}});
    }
    if (cluster)
      cluster->restore_watches();
    else
      caf::anon_send(watches, actors::restore_atom::value, actors::watch_restore_plan_ptr{});
    for (auto& s : shards) s->start();
    server.start();
    logging::info("node.listening", {{"address", address},
                                     {"tls_address", tls_address},
                                     {"data_dir", cfg.data_dir},
                                     {"durability", persistence::durability_name(cfg.durability)},
                                     {"io_threads", static_cast<std::uint64_t>(cfg.io_threads)}});

    int sig = 0;
    for (;;) {
      sigwait(&signals, &sig);
      if (sig != SIGHUP) break;
      auto [status, body] = reload();
      audit.record("reload", {{"via", "SIGHUP"}, {"status", status}, {"result", body}});
    }
    if (drain_from_api)
      logging::info("node.draining", {{"via", "POST /admin/v1/drain"}});
    else
      logging::info("node.draining", {{"via", "signal"}, {"signal", std::string(::strsignal(sig))}});

    routes.set_draining();
    server.stop_accepting();
    std::string reconnect_url;
    if (cluster) {
      // Streams move (with their logs) before the sessions are let go, so
      // a client reconnecting elsewhere resumes with its cursor.
      auto left = cluster->drain();
      reconnect_url = cluster->reconnect_url();
      logging::info("node.handed_off",
                    {{"streams_left", static_cast<std::uint64_t>(left)}, {"reconnect_url", reconnect_url}});
    }
    for (auto& s : shards) s->drain(reconnect_url);
    auto sessions_left = [&] {
      std::size_t n = 0;
      for (auto& s : shards) n += s->session_count();
      return n;
    };
    if (!waiter.wait(cfg.drain, [&] { return sessions_left() == 0; }))
      logging::warn("node.drain_timeout", {{"sessions", static_cast<std::uint64_t>(sessions_left())}});
    // An admin view started before the drain answers within its 2 s
    // deadline, which runs on the sources thread: let it, then stop that.
    for (int i = 0; i < 300 && routes.admin_requests_in_flight() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));

    end_watches();
    end_sources();
    if (cluster) cluster->stop();
    // Everything accepted is written before the hubs go away.
    committer.stop();
    for (auto& h : hubs.all()) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
    await_actors(system);
    for (auto& s : shards) s->stop_context();
    for (auto& s : shards) s->join();
    for (auto& s : shards) s->discard_sessions();
  }
  logging::info("node.stopped");
  return 0;
}

}  // namespace tidings::broker
