#pragma once

// The `upstreams:` section of the node's YAML config (issue 4): which MCP
// servers, Kubernetes contexts, PostgreSQL databases, file roots and
// webhook/poll resources this node may subscribe to. Strings may use
// ${env.NAME}, replaced from the environment (tokens belong there, not in
// the file). Parsed and checked at start: a bad section stops the node with
// a message naming the setting.
//
//   upstreams:
//     mcp:
//       memory: {command: [node, server.js], env: {K: V}, cwd: /x, timeout_ms: 30000}
//       remote: {url: http://127.0.0.1:3001/mcp, headers: {Authorization: Bearer ...}}
//     kube:
//       prod: {server: http://127.0.0.1:6443, token: "${env.KUBE_TOKEN}", timeout_ms: 10000}
//     postgres:
//       app: {conninfo: "host=127.0.0.1 port=5432 dbname=app", path_field: id}
//     files: {roots: [/srv/data]}
//     resources:
//       - uri: reports://folder
//         name: reports
//         description: "... Example: ..."
//         mime_type: application/json
//         backend: {url: http://..., headers: {}, expected_status_codes: [200, 404]}
//         watch: {strategy: {type: webhook, token: "${env.T}", previous_tokens: []}}
//         # or     {strategy: {type: poll, interval_ms: 60000}}
//     allowed_origins: [https://app.example]

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "sources/file/file_config.hpp"
#include "sources/kube/kube_config.hpp"
#include "sources/mcp/mcp_config.hpp"
#include "sources/postgres/postgres_config.hpp"
#include "sources/source_loop.hpp"
#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace YAML {
class Node;
}

namespace tidings::broker {

struct upstreams_config {
  std::vector<sources::mcp::mcp_config> mcp;
  std::vector<sources::kube::kube_config> kube;
  std::vector<sources::postgres::postgres_config> postgres;
  std::optional<sources::file::file_config> files;
  sources::web::web_config web;

  bool empty() const {
    return mcp.empty() && kube.empty() && postgres.empty() && !files && web.resources.empty();
  }
};

// Fills *out from the section; an error names the offending setting.
std::optional<std::string> parse_upstreams(const YAML::Node& section, upstreams_config* out);

// "${env.NAME}" replaced throughout; an unset variable is an error.
std::optional<std::string> interpolate_env(const std::string& text, std::string* out);

// The connectors, in configuration order (which routing's fallback follows).
std::vector<std::unique_ptr<sources::connector>> make_connectors(boost::asio::io_context& ioc,
                                                                 const upstreams_config& cfg);

// The connectors' names (sources::connector::name()), in make_connectors order.
std::vector<std::string> connector_names(const upstreams_config& cfg);

// Only the connectors named in `only`, in make_connectors order.
std::vector<std::unique_ptr<sources::connector>> make_connectors(boost::asio::io_context& ioc,
                                                                 const upstreams_config& cfg,
                                                                 const std::set<std::string>& only);

// What a reload changes, per connector name. Webhook tokens and
// allowed_origins are not part of a connector's settings here: tokens go
// to the running web connector (post_webhook_tokens), and allowed_origins
// is read by the front door at start. Applied by
// sources::reconfigure_upstreams (sources/source_registry.hpp).
struct upstreams_diff {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<std::string> changed;
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
};
upstreams_diff diff_upstreams(const upstreams_config& running, const upstreams_config& fresh);

// A reload's webhook tokens, handed to the web connector on the sources
// thread. Posted, not awaited: a webhook call answered after this one (also
// posted there) already sees the new tokens.
void post_webhook_tokens(sources::source_loop& loop, std::vector<sources::web::webhook_tokens> tokens);

}  // namespace tidings::broker
