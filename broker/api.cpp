#include "broker/api.hpp"

#include <algorithm>
#include <string_view>

#include "broker/live_files.hpp"

namespace tidings::broker {
namespace {

// A page this node served (the live view) calling back to it. Browsers mark
// such requests `Sec-Fetch-Site: same-origin`, comparing scheme, host and
// port as they saw them (so it holds behind a proxy too), and pages cannot
// set the header; non-browser clients are not what origin checks stop.
bool same_origin(const http_request& req) {
  const auto* site = req.header("sec-fetch-site");
  return site && *site == "same-origin";
}

std::string_view segment_between(std::string_view path, std::string_view prefix, std::string_view suffix) {
  if (!path.starts_with(prefix) || !path.ends_with(suffix) || path.size() <= prefix.size() + suffix.size())
    return {};
  auto name = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  return name.find('/') == std::string_view::npos ? name : std::string_view();
}

http_response method_not_allowed(std::string_view allow) {
  auto r = error_response(405, "method not allowed here; use " + std::string(allow));
  r.headers.emplace_back("Allow", std::string(allow));
  return r;
}

// Headers a browser needs to read a cross-origin answer it was allowed.
std::vector<std::pair<std::string, std::string>> cors_headers(const std::string& origin) {
  return {{"Access-Control-Allow-Origin", origin},
          {"Access-Control-Allow-Credentials", "true"},
          {"Access-Control-Expose-Headers", "Idempotent-Replay, Retry-After"},
          {"Vary", "Origin"}};
}

void add_sse_headers(relay::sse_request& sse,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [k, v] : headers) sse.extra_headers.append(k).append(": ").append(v).append("\r\n");
}

void add_headers(http_response& r, const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& h : headers) r.headers.push_back(h);
  if (r.sse) add_sse_headers(*r.sse, headers);
}

}  // namespace

api::api(actors::hub_registry& hubs, actors::watch_manager_actor watches, persistence::store& store,
         const config& cfg, sources::source_loop& loop, actors::source_registry_actor sources,
         api_security security)
    : hubs_(hubs),
      watches_(std::move(watches)),
      store_(store),
      cfg_(cfg),
      loop_(loop),
      sources_(std::move(sources)),
      security_(std::move(security)) {
  site_.loopback_only = listens_on_loopback_only(cfg);
  site_.hosts = cfg.allowed_hosts;
  site_.origins = cfg.allowed_origins;
}

route_result api::handle(const http_request& req, responder respond) {
  std::string_view path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  // Before anything, webhooks and the live view included: a page that
  // reached a loopback node by its own DNS name (rebinding) gets nothing.
  if (auto why = host_refusal(req, site_)) return {error_response(403, *why), {}};
  // Open routes: liveness, and webhooks, whose URL token is their credential.
  if (path == "/healthz") {
    if (!get) return {method_not_allowed("GET"), {}};
    return {http_response{200, "{\"status\":\"ok\"}", "application/json", {}, {}, {}}, {}};
  }
  // Open like /healthz: load balancers and kubelet probes send no token,
  // and the answer says nothing a tenant's data could be read from.
  if (path == "/readyz") {
    if (!get) return {method_not_allowed("GET"), {}};
    if (draining_) return {error_response(503, "draining"), {}};
    // Reads go on, but a node that takes no writes is not ready for them.
    if (write_guard_ && !write_guard_->writable())
      return {error_response(503, "storage: " + write_guard_->current().reason), {}};
    if (cluster_.member && !cluster_.member())
      return {error_response(
                  503,
                  "not a cluster member now: not listed in etcd yet, its lease lapsed, or at least as many "
                  "members hold another cluster secret or tenants (the log says which)"),
              {}};
    return {http_response{200, "{\"status\":\"ready\"}", "application/json", {}, {}, {}}, {}};
  }
  if (auto token = segment_between(path, "/webhooks/resource-updated/", ""); !token.empty()) {
    if (req.method == "POST") return fire_webhook(std::string(token), req, std::move(respond));
    return {method_not_allowed("POST"), {}};
  }
  if (auto page = serve_live_file(req)) return {std::move(page), {}};
  if (req.method == "OPTIONS") return {preflight(req), {}};
  // A near-miss webhook path (a doubled slash) still carries a token.
  if (path.starts_with("/webhooks/")) return {error_response(404, "no such webhook route"), {}};

  auto admitted = security_.auth.authenticate(req);
  if (!admitted.auth) {
    if (metrics_ && admitted.status == 401)
      metrics_->relay().unauthorized(core::token_problem_name(admitted.problem));
    security_.audit.record_denial({{"reason", core::token_problem_name(admitted.problem)},
                                   {"method", req.method},
                                   {"route", req.path.substr(0, 64)},
                                   {"status", admitted.status}});
    auto r = error_response(admitted.status, admitted.error);
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"tidings\", error=\"invalid_token\"");
    return {std::move(r), {}};
  }
  return route_checked(req, admitted.auth, std::move(respond));
}

route_result api::route_checked(const http_request& req, const caller& who, responder respond) {
  // A form or fetch from another site (another port of this host counts)
  // must not change state here, with a token from a cookie or none at all.
  if (cross_site_without_origin(req))
    return {forbidden(who, req,
                      "a request from another site may not change state here (Sec-Fetch-Site: " +
                          *req.header("sec-fetch-site") + ", no Origin)"),
            {}};
  const auto* origin = req.header("origin");
  if (!origin || same_origin(req)) return route(req, who, std::move(respond));
  if (who->anonymous) {
    if (!anonymous_origin_allowed(req, *origin, site_))
      return {forbidden(who, req,
                        "origin '" + origin->substr(0, 128) +
                            "' is not allowed (allowed-origins lists the pages that may call this node)"),
              {}};
    // The node's own pages (seen without Sec-Fetch-Site) need no CORS headers.
    if (auto own = own_origin(req); own && *own == *origin) return route(req, who, std::move(respond));
  } else if (!origin_allowed(who, *origin)) {
    return {forbidden(who, req, "origin '" + *origin + "' is not allowed"), {}};
  }
  auto headers = cors_headers(*origin);
  auto result = route(req, who, [respond = std::move(respond), headers](http_response r) {
    add_headers(r, headers);
    respond(std::move(r));
  });
  if (result.response) add_headers(*result.response, headers);
  if (result.sse) add_sse_headers(*result.sse, headers);
  return result;
}

route_result api::route(const http_request& req, const caller& who, responder respond) {
  std::string_view path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";

  if (auto name = segment_between(path, "/v1/streams/", "/events"); !name.empty()) {
    if (req.method == "POST") return publish(std::string(name), req, who, std::move(respond));
    if (get) return history(std::string(name), req, who, std::move(respond));
    return {method_not_allowed("GET, POST"), {}};
  }
  if (path == "/v1/streams" || path == "/v1/streams/") {
    if (get) return {list_streams(who), {}};
    return {method_not_allowed("GET"), {}};
  }
  if (auto name = segment_between(path, "/v1/streams/", ""); !name.empty()) {
    if (get) return get_stream(std::string(name), req, who, std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/watches" || path == "/v1/watches/") {
    if (req.method == "POST") return start_watch(req, who, std::move(respond));
    if (get) return list_watches(std::nullopt, who, std::move(respond));
    return {method_not_allowed("GET, POST"), {}};
  }
  if (auto name = segment_between(path, "/v1/watches/", ""); !name.empty()) {
    if (get) return list_watches(std::string(name), who, std::move(respond));
    if (req.method == "DELETE") return stop_watch(std::string(name), req, who, std::move(respond));
    return {method_not_allowed("GET, DELETE"), {}};
  }
  if (path == "/v1/sse") {
    if (req.method == "GET") return open_sse(req, who, std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  const bool sources_route = path == "/v1/resources" || path == "/v1/resources/" ||
                             path == "/v1/resources/read" || path == "/v1/sources" || path == "/v1/sources/";
  // Upstream resources are the node's, shared by its tenants; reading
  // them takes a read grant on every source stream ("src:*" or "*").
  if (sources_route && !who->who.read.covers_prefix("src:*", ""))
    return {forbidden(who, req, "reading upstream resources needs a read grant on src:*"), {}};
  if (path == "/v1/resources" || path == "/v1/resources/") {
    if (get) return list_resources(std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/resources/read") {
    if (get) return read_resource(req, std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/sources" || path == "/v1/sources/") {
    if (get) return list_sources(who, std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path.starts_with("/admin/")) {
    if (!who->who.admin) return {forbidden(who, req, "the admin API needs a token with tidings.admin"), {}};
    if (auto r = admin_routes(req, who, respond)) return std::move(*r);
    if (path == "/admin/v1/tokens/revoke") {
      if (req.method == "POST") return revoke_tokens(req, who);
      return {method_not_allowed("POST"), {}};
    }
    if (path == "/admin/v1/reload") {
      if (req.method == "POST") return reload_config(who);
      return {method_not_allowed("POST"), {}};
    }
  }
  if (path == "/metrics") {
    if (!get) return {method_not_allowed("GET"), {}};
    // Node-wide figures: another tenant's load is not a tenant admin's business.
    if (!is_operator(who)) return {forbidden(who, req, "/metrics needs an operator's admin token"), {}};
    if (!metrics_) return {error_response(503, "metrics are not set up"), {}};
    return {http_response{200, metrics_->scrape(), metrics::content_type, {}, {}, {}}, {}};
  }
  return {error_response(404, "no such route: " + req.method + " " + req.path), {}};
}

http_response api::forbidden(const caller& who, const http_request& req, const std::string& what) {
  security_.audit.record_denial({{"reason", "forbidden"},
                                 {"tenant", who->who.tenant},
                                 {"sub", who->who.subject},
                                 {"method", req.method},
                                 {"route", req.path.substr(0, 64)},
                                 {"status", 403}});
  return error_response(403, what);
}

tenant_limits api::limits_of(const caller& who) const {
  if (who->anonymous) {
    // One trusted local tenant: only the node's own limits apply.
    tenant_limits l;
    l.sse_sessions = l.sse_sessions_per_subject = SIZE_MAX;
    l.watches = cfg_.watches.max_watches_per_tenant;
    l.publish_rate = l.publish_burst = 0;  // 0: no rate limit
    l.max_body_bytes = cfg_.max_body_bytes;
    l.unknown_streams = SIZE_MAX;  // the node's max-unknown-streams
    l.streams = SIZE_MAX;
    return l;
  }
  auto table = security_.auth.tenants();
  if (const auto* t = table->find(who->who.tenant)) return t->limits;
  return {};
}

bool api::origin_allowed(const caller& who, const std::string& origin) const {
  auto table = security_.auth.tenants();
  const auto* t = table->find(who->who.tenant);
  return t &&
         std::find(t->allowed_origins.begin(), t->allowed_origins.end(), origin) != t->allowed_origins.end();
}

http_response api::preflight(const http_request& req) const {
  const auto* origin = req.header("origin");
  if (!origin) return error_response(400, "OPTIONS is answered for CORS preflight requests only (no Origin)");
  // No token comes with a preflight: any tenant's origin may ask; the
  // request itself is checked against its own tenant's list.
  bool known = cfg_.tenants.empty() && anonymous_origin_allowed(req, *origin, site_);
  for (const auto& t : security_.auth.tenants()->tenants)
    known = known ||
            std::find(t.allowed_origins.begin(), t.allowed_origins.end(), *origin) != t.allowed_origins.end();
  if (!known) return error_response(403, "origin '" + *origin + "' is not allowed");
  http_response r{204, "", "application/json", cors_headers(*origin), {}, {}};
  r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, DELETE");
  r.headers.emplace_back("Access-Control-Allow-Headers",
                         "Authorization, Content-Type, Idempotency-Key, Last-Event-ID");
  r.headers.emplace_back("Access-Control-Max-Age", "600");
  return r;
}

}  // namespace tidings::broker
