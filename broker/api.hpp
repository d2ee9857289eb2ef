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
#include "broker/config.hpp"
#include "broker/http_types.hpp"
#include "persistence/store.hpp"
#include "relay/sse_options.hpp"
#include "sources/source_loop.hpp"

namespace tidings::broker {

using responder = std::function<void(http_response)>;

struct route_result {
  std::optional<http_response> response;  // answered now
  std::optional<relay::sse_request> sse;  // becomes an SSE session
  // neither: `respond` will be called (from any thread)
};

class api {
 public:
  api(actors::hub_registry& hubs, actors::watch_manager_actor watches, persistence::store& store,
      const config& cfg, sources::source_loop& loop, actors::source_registry_actor sources);

  route_result handle(const http_request& req, responder respond);

  void set_draining() { draining_ = true; }
  bool draining() const { return draining_; }

 private:
  route_result publish(const std::string& stream, const http_request& req, responder respond);
  http_response history(const std::string& stream, const http_request& req);
  http_response list_streams();
  http_response get_stream(const std::string& stream);
  route_result open_sse(const http_request& req, responder respond);
  // Subscribes the session's uri= sources, then answers with the session.
  route_result open_sse_with_sources(relay::sse_request out, std::vector<std::string> uris,
                                     responder respond);
  // GET /v1/resources, /v1/resources/read, /v1/sources; POST /webhooks/...
  route_result list_resources(responder respond);
  route_result read_resource(const http_request& req, responder respond);
  route_result list_sources(responder respond);
  route_result fire_webhook(const std::string& token, const http_request& req, responder respond);
  route_result start_watch(const http_request& req, responder respond);
  // All of the tenant's watches, or the one named.
  route_result list_watches(std::optional<std::string> name, responder respond);
  route_result stop_watch(const std::string& name, responder respond);

  actors::hub_registry& hubs_;
  actors::watch_manager_actor watches_;
  persistence::store& store_;
  const config& cfg_;
  sources::source_loop& loop_;
  actors::source_registry_actor sources_;
  std::atomic<bool> draining_{false};
};

}  // namespace tidings::broker
