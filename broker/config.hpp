#pragma once

// Node configuration: built-in defaults, then a YAML file (--config), then
// flags. Every key of the file is also a flag of the same name, except the
// file's tenants: and upstreams: sections. Strings may use ${env.NAME}.
// Unknown keys are errors at every level, and every error names the
// setting's path ("config file F: tenants[1].keys[0]: unknown alg ...").
// config/tidings.example.yaml lists every setting with its default.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/watch_types.hpp"
#include "broker/tenant_config.hpp"
#include "broker/upstream_config.hpp"
#include "cluster/node_certificate.hpp"
#include "core/retention.hpp"
#include "logging/log.hpp"
#include "net/tls_context.hpp"
#include "net/tls_server.hpp"
#include "persistence/store.hpp"
#include "relay/sse_options.hpp"

namespace tidings::broker {

// The shortest cluster secret accepted (cluster::min_secret_bytes).
inline constexpr std::size_t cluster_secret_min_bytes = 32;

std::size_t default_io_threads();

struct config {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  // HTTPS beside the plain listener (config `tls: {listen, cert, key}`):
  // host and port, the PEM files, and the keys loaded from them once every
  // setting is read (so a bad file stops the node, and --check-config says
  // so); SIGHUP and POST /admin/v1/reload read the files again.
  struct address {
    std::string host;  // as given, "localhost" as 127.0.0.1, IPv6 without brackets
    std::uint16_t port = 0;
  };
  std::optional<address> tls_listen;
  std::string tls_cert;
  std::string tls_key;
  std::shared_ptr<net::tls_server_keys> tls_keys;
  // Cross-site requests (broker/site_guard.hpp): origins besides the node's
  // own that may call it without tenants, and names besides loopback's that
  // a Host header may give while the node listens on loopback.
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;
  std::string data_dir = "./data";
  persistence::durability durability = persistence::durability::sync;
  core::retention_policy retention;
  // How long an Idempotency-Key answers a retry (ADR 0005's amendment).
  std::chrono::hours idempotency_ttl{24};
  relay::sse_options sse;
  std::size_t ring_events = 1024;
  std::size_t max_unknown_streams = 10000;
  // A stream's hub idle this long is released from memory (0: never).
  std::chrono::milliseconds stream_idle{300000};
  // Free space kept on the data directory's disk: writes are refused (507)
  // below it, so RocksDB never meets a full disk (persistence/write_guard).
  std::uint64_t storage_reserve_mb = 256;
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_header_bytes = 16 << 10;
  // The front door's deadlines and connection limits (broker::http_limits).
  std::size_t max_header_count = 100;
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds header_timeout{10000};
  // The open-file limit (20 000 here) bounds a node anyway; 0 per address
  // means 256 with tenants and none without (one trusted loopback user,
  // e.g. a load test's thousands of sessions).
  std::size_t max_connections = 20000;
  std::size_t max_connections_per_address = 0;
  // Half the cores (at least one): the hubs, the group committer and the
  // kernel's loopback and TCP work need the rest. Measured in
  // docs/performance.md: on 2 cores one I/O thread delivers 1.3-1.5x more.
  std::size_t io_threads = default_io_threads();
  std::chrono::milliseconds drain{5000};
  // Watches: per-tenant count, filter budgets (ADR 0005's limits table).
  actors::watch_limits watches;
  // Upstream sources (the config file's `upstreams:` section).
  upstreams_config upstreams;
  // The first resubscribe wait; each of the 5 attempts doubles it (1, 2, 4, 8, 16 s).
  std::chrono::milliseconds source_backoff{1000};
  // Log levels (`log-level: info,source=debug`); --verbose makes the base
  // level debug whatever log-level says (effective_log_levels).
  logging::level_spec log_levels;
  bool verbose = false;
  // Tenants and their token keys (the config file's `tenants:` section).
  // None: the single tenant `default`, no auth, loopback only.
  std::vector<tenant_spec> tenants;
  // The audit trail (NDJSON); empty: <data-dir>/audit.ndjson, "-": stderr.
  std::string audit_log;
  // The file given with --config, re-read on SIGHUP or POST /admin/v1/reload.
  std::string config_path;
  // The file's settings other than tenants, as read at start (YAML text).
  std::map<std::string, std::string> file_settings;
  // The settings given as flags: a reload keeps their values over the file's.
  std::set<std::string> flag_settings;
  // Cluster (docs/cluster.md): no cluster_listen, a single node.
  std::optional<std::string> cluster_listen;  // host:port for the node-to-node port
  std::string cluster_advertise;              // what peers dial; empty: cluster_listen
  // The cluster's agreed record (ADR 0022): etcd members' client URLs
  // (http://host:port or https://), the key prefix this cluster's keys live under (one
  // etcd may hold several clusters), and the TTL of this node's membership
  // lease: a node that cannot renew it for that long counts as gone.
  std::vector<std::string> etcd_endpoints;
  // https:// members: etcd-ca-file, etcd-client-cert, etcd-client-key (etcd's
  // --client-cert-auth), and the context made from them once all are read.
  net::tls_settings etcd_tls;
  std::shared_ptr<net::tls_context> etcd_tls_context;
  std::string etcd_prefix = "/tidings/";
  std::int64_t member_lease_seconds = 5;
  std::string advertise;  // HTTP host:port clients are sent to; empty: listen
  // The operator vouches that only the nodes reach a non-loopback cluster port.
  bool cluster_private_network = false;
  // Cluster TLS (ADR 0032): cluster-ca, cluster-cert and cluster-key (config
  // cluster-tls: {ca, cert, key}), read and checked once at start; with them
  // the cluster port speaks mutual TLS only.
  std::string cluster_ca;
  std::string cluster_cert;
  std::string cluster_key;
  std::shared_ptr<const cluster::node_certificate> cluster_tls;
  // The secret every member holds (ADR 0024), from cluster-secret-file or
  // the config file's cluster-secret (at least 32 bytes, trailing blanks
  // and newlines dropped): it seals the member records in etcd and members
  // prove it to each other on joining.
  std::string cluster_secret;
  // Replication (ADR 0017): copies of each stream's log, the owner's
  // included (1: none), and how many followers must hold a write before it
  // is acknowledged (nullopt: every follower that is in sync).
  std::size_t replication_factor = 2;
  std::optional<std::size_t> write_quorum;
  // Copies, the owner's included, that must be in sync for a write to be
  // acknowledged (ADR 0021); with fewer, writes are refused and reads go
  // on. nullopt: 2 when replication-factor is 2 or more, else 1.
  std::optional<std::size_t> min_insync;
  // How long a follower in the ISR may go without holding the leader's
  // head before the leader drops it from the ISR (Kafka's
  // replica.lag.time.max.ms); until then writes wait for it.
  std::chrono::milliseconds replica_lag{10000};
  // --check-config FILE: validate the configuration and exit, start nothing.
  bool check_only = false;
};

std::map<std::string, std::string> file_settings(const std::string& path);

// The min-insync the node runs with: the setting, or its default.
std::size_t min_insync(const config& c);

// The names of the top-level settings (each also a --flag), sorted.
std::vector<std::string> setting_names();

// Every port the node serves HTTP on (listen, and tls-listen when set) is
// loopback: Host headers are then checked against DNS rebinding
// (site_guard.hpp). One port beyond loopback and names are the network's.
bool listens_on_loopback_only(const config& c);

// "host:port", an IPv6 host in brackets: how addresses are logged and shown.
std::string host_port(const std::string& host, std::uint16_t port);

// The levels the node logs at: log_levels, with a debug base under --verbose.
logging::level_spec effective_log_levels(const config& c);

// "2 tenants, 1 upstream, listen 127.0.0.1:8080, data-dir ./data, log-level info".
std::string summary(const config& c);

// What a reload applies, read from the config file again.
struct reload_plan {
  // Tenants, their keys, limits, origins and scopes.
  std::vector<tenant_spec> tenants;
  // The file's log-level and verbose (or their flags', which win).
  logging::level_spec log_levels;
  // Every webhook resource's tokens, when the web connector ("resources")
  // is neither added, removed nor changed otherwise; nullopt when it is
  // (a new connector has them already) or when allowed_origins changed.
  std::optional<std::vector<sources::web::webhook_tokens>> webhook_tokens;
  // The upstreams to run from now on, and what changed per connector;
  // applied live (apply_upstreams). A changed allowed_origins is the one
  // upstreams setting that needs a restart ("upstreams" in restart_needed):
  // the web connector then stays as it runs, tokens included.
  upstreams_config upstreams;
  upstreams_diff upstream_changes;
  // The other settings whose value differs from what the node started with.
  std::vector<std::string> restart_needed;
};

// Re-reads `path` (the file only: flags are not given again) for what a
// reload may change; on an error *plan is left unchanged.
std::optional<std::string> plan_reload(const std::string& path, const config& running, reload_plan* plan);

struct parse_outcome {
  std::optional<config> cfg;      // nullopt: see error, or help was asked for
  std::string error;              // empty with no cfg: print usage and exit 0
  bool bad_command_line = false;  // the error is in the arguments: show the usage too
};

parse_outcome parse_config(const std::vector<std::string>& args);
std::string usage();

}  // namespace tidings::broker
