#pragma once

// Node configuration: built-in defaults, then a YAML file (--config), then
// flags. Every key of the file is also a flag of the same name.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/watch_types.hpp"
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
};

struct parse_outcome {
  std::optional<config> cfg;  // nullopt: see error, or help was asked for
  std::string error;          // empty with no cfg: print usage and exit 0
};

parse_outcome parse_config(const std::vector<std::string>& args);
std::string usage();

}  // namespace tidings::broker
