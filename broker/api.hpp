#pragma once

// Routes of the front door (docs/api.md). Handlers answer at once, later
// through `respond` (publishes wait for durability), or hand the connection
// over to an SSE session.

#include <atomic>
#include <functional>
#include <optional>

#include "actors/hub_registry.hpp"
#include "actors/source_registry_actor.hpp"
#include "actors/watch_actors.hpp"
#include "broker/audit_log.hpp"
#include "broker/auth_service.hpp"
#include "broker/config.hpp"
#include "broker/http_types.hpp"
#include "broker/metrics.hpp"
#include "broker/site_guard.hpp"
#include "broker/usage_limits.hpp"
#include "persistence/store.hpp"
#include "persistence/write_guard.hpp"
#include "relay/io_shard.hpp"
#include "relay/sse_options.hpp"
#include "sources/source_loop.hpp"

namespace tidings::broker {

using responder = std::function<void(http_response)>;

struct route_result {
  std::optional<http_response> response;  // answered now
  std::optional<relay::sse_request> sse;  // becomes an SSE session
  // neither: `respond` will be called (from any thread)
};

// What a route needs besides the request: the caller's admitted credential.
using caller = session_auth_ptr;

// Security services the routes use, owned by the node.
struct api_security {
  auth_service& auth;
  usage_limits& limits;
  audit_log& audit;
  // Re-reads the config file and applies what can change live; the reply
  // body, or an error for a 4xx/5xx.
  std::function<std::pair<unsigned, nlohmann::json>()> reload;
};

// What this node holds, for the admin view and its cluster peers.
struct local_node_counts {
  std::size_t streams = 0;  // owned streams with a hub
  std::size_t relays = 0;   // streams owned elsewhere, relayed here
  std::size_t sources = 0;
  std::size_t watches = 0;
  std::size_t sessions = 0;
  bool partial = false;  // some part did not answer in time
};

// A stream's log as its owner (another cluster member) sent it.
struct remote_log {
  bool reached = false;  // the owner answered in time
  std::optional<persistence::stream_meta> meta;
  std::vector<persistence::stored_event> events;  // after the asked seq, in order
};

// What the routes need from the cluster (docs/cluster.md); unset on a
// single node.
struct cluster_hooks {
  // The member owning the stream, "" for this node.
  std::function<std::string(const std::string& tenant, const std::string& stream)> owner_of;
  // Up to `max` events after `after_seq` and the meta, from the owner.
  std::function<void(const std::string& tenant, const std::string& stream, std::uint64_t after_seq,
                     std::size_t max, std::function<void(remote_log)> done)>
      read;
  // Every member as a JSON array of rows (nullopt: no answer in time).
  std::function<void(std::function<void(std::optional<std::string>)>)> nodes;
  // Watches on whichever member runs them (the request's reply is called
  // from any thread).
  std::function<void(actors::watch_start_request_ptr)> start_watch;
  std::function<void(actors::watch_list_request_ptr)> list_watches;
  std::function<void(actors::watch_stop_request_ptr)> stop_watch;
  // Replication (ADR 0017): per (tenant, stream) this node owns or follows,
  // a JSON object of its term and its followers' or its copy's state.
  std::function<std::map<std::pair<std::string, std::string>, std::string>()> replication;
  // Whether this node is a member now: listed in etcd under its lease, and
  // not outvoted (ADR 0024). A node that is not owns nothing: not ready.
  std::function<bool()> member;
  // An operator's forced election of this node for a stream (ADR 0021):
  // a JSON body with its HTTP status in "status" (nullopt: no answer).
  std::function<void(const std::string& tenant, const std::string& stream, bool accept_loss,
                     std::function<void(std::optional<std::string>)>)>
      force_leader;
};

// The node as the admin API shows it, known once it listens.
struct node_identity {
  std::string id;       // generated once, kept in the store's meta family
  std::string address;  // host:port it listens on
  std::int64_t started_at_ms = 0;
};

class api {
 public:
  api(actors::hub_registry& hubs, actors::watch_manager_actor watches, persistence::store& store,
      const config& cfg, sources::source_loop& loop, actors::source_registry_actor sources,
      api_security security);

  route_result handle(const http_request& req, responder respond);

  // GET /metrics serves these (operators only); 401s are counted there.
  void set_metrics(metrics* m) { metrics_ = m; }

  void set_draining() { draining_ = true; }
  // Admin views still gathering their parts (they need the sources thread).
  int admin_requests_in_flight() const { return admin_in_flight_.load(); }
  bool draining() const { return draining_; }

  // What the admin API reads and does besides the routes' own services: the
  // node's identity, its I/O shards (the live sessions) and how to start a
  // graceful drain. Called once, before the server starts.
  void set_node(node_identity node, std::vector<std::shared_ptr<relay::io_shard>> shards,
                std::function<void()> drain);
  // An admin of an operator tenant, or the no-auth mode's caller: it sees
  // every tenant in the admin views and may drain and reload (ADR 0011).
  bool is_operator(const caller& who) const;

  // This node's counts, once every part answered (or its deadline passed);
  // `done` runs on whichever thread delivered the last part.
  void local_counts(std::function<void(local_node_counts)> done);
  // The node's write guard (set once, before the server starts): readiness
  // fails while it refuses writes.
  void set_write_guard(const persistence::write_guard* guard) { write_guard_ = guard; }
  // In a cluster. Set once, before the server starts.
  void set_cluster(cluster_hooks hooks) { cluster_ = std::move(hooks); }

 private:
  route_result route(const http_request& req, const caller& who, responder respond);
  route_result publish(const std::string& stream, const http_request& req, const caller& who,
                       responder respond);
  route_result history(const std::string& stream, const http_request& req, const caller& who,
                       responder respond);
  http_response list_streams(const caller& who);
  route_result get_stream(const std::string& stream, const http_request& req, const caller& who,
                          responder respond);
  // The stream's owner in a cluster when it is another member, else "".
  std::string remote_owner(const caller& who, const std::string& stream) const;
  route_result open_sse(const http_request& req, const caller& who, responder respond);
  // Subscribes the session's uri= sources, then answers with the session.
  route_result open_sse_with_sources(relay::sse_request out, std::vector<std::string> uris, caller who,
                                     responder respond);
  // The session's guard, built once every stream is known.
  void guard_session(relay::sse_request& out, const caller& who) const;
  // GET /v1/resources, /v1/resources/read, /v1/sources; POST /webhooks/...
  route_result list_resources(responder respond);
  route_result read_resource(const http_request& req, responder respond);
  route_result list_sources(const caller& who, responder respond);
  route_result fire_webhook(const std::string& token, const http_request& req, responder respond);
  route_result start_watch(const http_request& req, const caller& who, responder respond);
  // All of the tenant's watches, or the one named.
  route_result list_watches(std::optional<std::string> name, const caller& who, responder respond);
  route_result stop_watch(const std::string& name, const http_request& req, const caller& who,
                          responder respond);
  // /admin/v1/tokens/revoke, /admin/v1/reload
  route_result revoke_tokens(const http_request& req, const caller& who);
  route_result reload_config(const caller& who);
  // The other /admin/v1 routes (views, drain) and the operator check for
  // reload; nullopt for a path it does not serve.
  std::optional<route_result> admin_routes(const http_request& req, const caller& who, responder& respond);
  route_result admin_watches(const caller& who, responder respond);
  route_result admin_streams(const caller& who, responder respond);
  route_result admin_sessions(const caller& who, responder respond);
  route_result admin_nodes(const caller& who, responder respond);
  route_result admin_tenants(const caller& who, responder respond);
  // The webhook resources with their tokens in full (operators only).
  route_result admin_webhooks(const http_request& req, const caller& who, responder respond);
  route_result drain_node(const http_request& req, const caller& who);
  route_result force_leader(const http_request& req, const caller& who, responder respond);

  // 403 with an audit line; `what` says which grant was missing.
  http_response forbidden(const caller& who, const http_request& req, const std::string& what);
  tenant_limits limits_of(const caller& who) const;
  // CORS preflight (OPTIONS): allowed for any configured tenant's origins.
  http_response preflight(const http_request& req) const;
  bool origin_allowed(const caller& who, const std::string& origin) const;
  // Checks an Origin (and the browser's Sec-Fetch-Site) before routing:
  // the tenant's allowed_origins, or without tenants the node's own origin
  // and the config's allowed-origins; CORS headers on what is allowed.
  route_result route_checked(const http_request& req, const caller& who, responder respond);

  actors::hub_registry& hubs_;
  actors::watch_manager_actor watches_;
  persistence::store& store_;
  const config& cfg_;
  sources::source_loop& loop_;
  actors::source_registry_actor sources_;
  api_security security_;
  site_policy site_;
  const persistence::write_guard* write_guard_ = nullptr;
  std::atomic<bool> draining_{false};
  metrics* metrics_ = nullptr;
  std::atomic<int> admin_in_flight_{0};
  node_identity node_;
  std::vector<std::shared_ptr<relay::io_shard>> shards_;
  std::function<void()> drain_;
  cluster_hooks cluster_;
};

}  // namespace tidings::broker
