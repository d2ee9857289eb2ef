#pragma once

// Configuration of one upstream MCP server (issue 4).

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/tls_context.hpp"

namespace tidings::sources::mcp {

enum class transport_kind { stdio, http };

// One configured MCP server, parsed by the node from its YAML config. `name`
// names the connector ("memory") and prefixes every error a user sees. With
// transport stdio Tidings spawns `command` (argv[0] looked up in PATH) in its
// own process group, with the node's environment plus `env`, in `cwd` (empty:
// the node's working directory), and speaks one JSON message per line; the
// server's stderr lines are logged. With transport http Tidings POSTs to
// `url` (Streamable HTTP, http:// or https://), adding `headers` (e.g.
// Authorization) to every request. Every request is
// bounded by `request_timeout`; every line or body by `max_message_bytes`.
// The protocol era (2026-07-28 or a legacy initialize-based version) is not
// configured: it is probed with server/discover on every (re)connection.
struct mcp_config {
  std::string name;
  transport_kind transport = transport_kind::stdio;
  // stdio
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string cwd;
  // http
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  // https:// only: the trust and client certificate (issue 24), and the
  // context made from them when the config was read (null: the system store).
  net::tls_settings tls;
  std::shared_ptr<net::tls_context> tls_context;
  // both
  std::chrono::milliseconds request_timeout{30000};
  std::size_t max_message_bytes = 16 * 1024 * 1024;
};

}  // namespace tidings::sources::mcp
