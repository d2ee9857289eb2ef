// GET /v1/resources, GET /v1/resources/read?uri=, GET /v1/sources,
// POST /webhooks/resource-updated/{token} and GET /admin/v1/webhooks: the
// front door of the upstream sources (issue 4). Connector work runs on the sources thread; its answer
// comes back through `respond`.

#include <algorithm>
#include <boost/asio/post.hpp>

#include "broker/api.hpp"
#include "core/read_extraction.hpp"
#include "sources/web/web_connector.hpp"

namespace tidings::broker {
namespace {

using nlohmann::json;

json resource_json(const sources::resource_info& r) {
  return {{"uri", r.uri},         {"template", r.template_},
          {"name", r.name},       {"description", r.description},
          {"example", r.example}, {"mime_type", r.mime_type},
          {"server", r.server},   {"subscribable", r.subscribable}};
}

json source_json(const actors::source_info& s) {
  json j = {{"uri", s.uri},     {"key", s.key},      {"stream", s.stream},           {"server", s.server},
            {"shape", s.shape}, {"state", s.state},  {"subscribers", s.subscribers}, {"failures", s.failures},
            {"reads", s.reads}, {"events", s.events}};
  if (!s.error.empty()) j["error"] = s.error;
  if (s.next_attempt_ms > 0) j["next_attempt_ms"] = s.next_attempt_ms;
  if (s.tls_unverified) j["tls"] = "unverified (insecure_skip_verify)";
  return j;
}

constexpr std::size_t max_uri_bytes = 2048;

}  // namespace

route_result api::list_resources(responder respond) {
  auto& loop = loop_;
  boost::asio::post(loop.context(), [&loop, respond = std::move(respond)] {
    loop.upstreams().ensure_started([&loop, respond] {
      json out = json::array();
      for (const auto& r : loop.upstreams().resources()) out.push_back(resource_json(r));
      respond(json_response(200, out));
    });
  });
  return {};
}

route_result api::read_resource(const http_request& req, responder respond) {
  const auto* uri = req.query_one("uri");
  if (!uri || uri->empty()) return {error_response(400, "name the resource: /v1/resources/read?uri=URI"), {}};
  if (uri->size() > max_uri_bytes) return {error_response(400, "uri is longer than 2048 bytes"), {}};
  auto& loop = loop_;
  boost::asio::post(loop.context(), [&loop, uri = *uri, respond = std::move(respond)] {
    loop.upstreams().ensure_started([&loop, uri, respond] {
      auto route = loop.upstreams().route(uri);
      if (!route.upstream) return respond(error_response(route.transient ? 503 : 404, route.error));
      route.upstream->read(route.uri, [respond](sources::read_outcome r) {
        if (!r.result) return respond(error_response(502, r.error));
        // Parsed JSON, else the text as a JSON string (ADR 0005's read_resource).
        auto value = core::parse_state_text(r.result->text);
        auto out = json_response(200, value);
        out.headers.emplace_back("X-Resource-Mime-Type", r.result->mime_type);
        respond(std::move(out));
      });
    });
  });
  return {};
}

route_result api::list_sources(const caller& who, responder respond) {
  auto req = std::make_shared<actors::source_list_request>();
  req->tenant = who->who.tenant;
  req->reply = [respond = std::move(respond)](const std::vector<actors::source_info>& list) {
    json out = json::array();
    for (const auto& s : list) out.push_back(source_json(s));
    respond(json_response(200, out));
  };
  caf::anon_send(sources_, actors::source_list_atom::value, actors::source_list_request_ptr(std::move(req)));
  return {};
}

route_result api::fire_webhook(const std::string& token, const http_request& req, responder respond) {
  // A browser on another site must not trigger watches; servers send no Origin.
  if (const auto* origin = req.header("origin")) {
    const auto& allowed = cfg_.upstreams.web.allowed_origins;
    if (std::find(allowed.begin(), allowed.end(), *origin) == allowed.end())
      return {error_response(403, "origin " + *origin + " is not allowed to call webhooks"), {}};
  }
  // The body and the headers a signature needs travel to the sources
  // thread, where the resources' tokens and secrets live.
  auto& loop = loop_;
  const auto* named = req.query_one("uri");  // a template's token names its resource
  boost::asio::post(loop.context(), [&loop, token, uri = named ? *named : std::string(), body = req.body,
                                     headers = req.headers, respond = std::move(respond)] {
    auto* web = dynamic_cast<sources::web::web_connector*>(loop.upstreams().find("resources"));
    if (!web) return respond(error_response(404, "unknown webhook token"));
    sources::web::webhook_call call;
    call.token = token;
    call.uri = uri;
    call.body = body;
    call.headers = [&headers](const std::string& name) -> const std::string* {
      auto it = headers.find(name);
      return it == headers.end() ? nullptr : &it->second;
    };
    call.now = std::chrono::system_clock::now();
    auto answer = web->fire(call);
    if (answer.status != 200) return respond(error_response(answer.status, answer.error));
    respond(json_response(200, {{"ok", true}, {"uri", answer.uri}}));
  });
  return {};
}

route_result api::admin_webhooks(const http_request& req, const caller& who, responder respond) {
  // Tokens in full: who read them is on record.
  security_.audit.record("webhook_tokens_read", {{"tenant", who->who.tenant},
                                                 {"by", who->who.subject},
                                                 {"via", req.method + " " + req.path.substr(0, 64)}});
  auto& loop = loop_;
  boost::asio::post(loop.context(), [&loop, respond = std::move(respond)] {
    json rows = json::array();
    if (auto* web = dynamic_cast<sources::web::web_connector*>(loop.upstreams().find("resources")))
      for (const auto& w : web->webhooks())
        rows.push_back({{"uri", w.uri},
                        {"template", w.is_template},
                        // A template's: with ?uri= naming one of its URIs.
                        {"url_path", "/webhooks/resource-updated/" + w.token},
                        {"token", w.token},
                        {"generated", w.generated},
                        {"previous_tokens", w.previous_tokens},
                        {"signature", w.signature.empty() ? json(nullptr) : json(w.signature)},
                        {"subscribed", w.subscribed}});
    auto out = json_response(200, {{"webhooks", std::move(rows)}});
    out.headers.emplace_back("Cache-Control", "no-store");  // credentials
    respond(std::move(out));
  });
  return {};
}

}  // namespace tidings::broker
