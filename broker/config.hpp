#pragma once

// Node configuration: built-in defaults, then a YAML file (--config), then
// flags. Every key of the file is also a flag of the same name.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/watch_types.hpp"
#include "broker/tenant_config.hpp"
#include "broker/upstream_config.hpp"
#include "core/retention.hpp"
#include "persistence/store.hpp"
#include "relay/sse_options.hpp"

namespace tidings::broker {

std::size_t default_io_threads();

struct config {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  std::string data_dir = "./data";
  persistence::durability durability = persistence::durability::sync;
  core::retention_policy retention;
  relay::sse_options sse;
  std::size_t ring_events = 1024;
  std::size_t max_unknown_streams = 10000;
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
};

std::map<std::string, std::string> file_settings(const std::string& path);

// Re-reads `path` for what a reload may change (tenants, keys, limits,
// origins, scopes); on success *tenants is replaced and *restart_needed
// lists the other settings whose value differs from `running`.
std::optional<std::string> reload_tenants(const std::string& path, const config& running,
                                          std::vector<tenant_spec>* tenants,
                                          std::vector<std::string>* restart_needed);

struct parse_outcome {
  std::optional<config> cfg;  // nullopt: see error, or help was asked for
  std::string error;          // empty with no cfg: print usage and exit 0
};

parse_outcome parse_config(const std::vector<std::string>& args);
std::string usage();

}  // namespace tidings::broker
