#include "broker/api.hpp"

#include <string_view>

namespace tidings::broker {
namespace {

// "/v1/streams/NAME/events" -> NAME; empty when the path is not of that shape.
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

}  // namespace

api::api(actors::hub_registry& hubs, actors::watch_manager_actor watches, persistence::store& store,
         const config& cfg, sources::source_loop& loop, actors::source_registry_actor sources)
    : hubs_(hubs),
      watches_(std::move(watches)),
      store_(store),
      cfg_(cfg),
      loop_(loop),
      sources_(std::move(sources)) {}

route_result api::handle(const http_request& req, responder respond) {
  std::string_view path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";

  if (auto name = segment_between(path, "/v1/streams/", "/events"); !name.empty()) {
    if (req.method == "POST") return publish(std::string(name), req, std::move(respond));
    if (get) return {history(std::string(name), req), {}};
    return {method_not_allowed("GET, POST"), {}};
  }
  if (path == "/v1/streams" || path == "/v1/streams/") {
    if (get) return {list_streams(), {}};
    return {method_not_allowed("GET"), {}};
  }
  if (auto name = segment_between(path, "/v1/streams/", ""); !name.empty()) {
    if (get) return {get_stream(std::string(name)), {}};
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/watches" || path == "/v1/watches/") {
    if (req.method == "POST") return start_watch(req, std::move(respond));
    if (get) return list_watches(std::nullopt, std::move(respond));
    return {method_not_allowed("GET, POST"), {}};
  }
  if (auto name = segment_between(path, "/v1/watches/", ""); !name.empty()) {
    if (get) return list_watches(std::string(name), std::move(respond));
    if (req.method == "DELETE") return stop_watch(std::string(name), std::move(respond));
    return {method_not_allowed("GET, DELETE"), {}};
  }
  if (path == "/v1/sse") {
    if (req.method == "GET") return open_sse(req, std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/resources" || path == "/v1/resources/") {
    if (get) return list_resources(std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/resources/read") {
    if (get) return read_resource(req, std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (path == "/v1/sources" || path == "/v1/sources/") {
    if (get) return list_sources(std::move(respond));
    return {method_not_allowed("GET"), {}};
  }
  if (auto token = segment_between(path, "/webhooks/resource-updated/", ""); !token.empty()) {
    if (req.method == "POST") return fire_webhook(std::string(token), req, std::move(respond));
    return {method_not_allowed("POST"), {}};
  }
  if (path == "/healthz") {
    if (!get) return {method_not_allowed("GET"), {}};
    return {http_response{200, "{\"status\":\"ok\"}", "application/json", {}, {}}, {}};
  }
  if (path == "/readyz") {
    if (!get) return {method_not_allowed("GET"), {}};
    if (draining_) return {error_response(503, "draining"), {}};
    return {http_response{200, "{\"status\":\"ready\"}", "application/json", {}, {}}, {}};
  }
  return {error_response(404, "no such route: " + req.method + " " + req.path), {}};
}

}  // namespace tidings::broker
