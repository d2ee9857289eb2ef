// POST /v1/watches, GET /v1/watches[/{name}], DELETE /v1/watches/{name}

#include "broker/api.hpp"
#include "broker/json_body.hpp"
#include "core/watch_uri.hpp"

namespace tidings::broker {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_filter_bytes = 64 << 10;
constexpr std::size_t max_uri_bytes = 2048;
constexpr std::int64_t max_debounce_ms = 3'600'000;

unsigned status_of(actors::watch_error_kind kind) {
  switch (kind) {
    case actors::watch_error_kind::bad_request:
      return 400;
    case actors::watch_error_kind::over_limit:
    case actors::watch_error_kind::busy:
      return 409;
    case actors::watch_error_kind::upstream:
      return 502;
    case actors::watch_error_kind::unavailable:
      break;
  }
  return 503;
}

json info_json(const actors::watch_info& w) {
  json j = {{"name", w.name},       {"uri", w.uri},
            {"shape", w.shape},     {"events", w.events},
            {"notices", w.notices}, {"filter_errors", w.filter_errors},
            {"state", w.state},     {"restore_failed", w.restore_failed}};
  if (!w.error.empty()) j["error"] = w.error;
  return j;
}

std::optional<std::string> millis_field(const json& value, const char* name, std::int64_t& out) {
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
      value.get<std::int64_t>() > max_debounce_ms)
    return std::string("\"") + name + "\" must be a whole number of milliseconds from 0 to " +
           std::to_string(max_debounce_ms);
  out = value.get<std::int64_t>();
  return std::nullopt;
}

// The spec a POST body asks for, or what is wrong with it.
std::optional<std::string> to_spec(const json& body, persistence::watch_spec& spec) {
  if (!body.is_object())
    return "the body must be a JSON object {name, uri, on_event?, debounce_ms?, max_wait_ms?}";
  for (const auto& [key, value] : body.items()) {
    if (key == "name") {
      if (!value.is_string() || !core::valid_watch_name(value.get_ref<const std::string&>()))
        return "\"name\" must be 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit";
      spec.id.name = value.get<std::string>();
    } else if (key == "uri") {
      if (!value.is_string() || value.get_ref<const std::string&>().size() > max_uri_bytes)
        return "\"uri\" must be a string of at most 2048 bytes";
      spec.uri = value.get<std::string>();
    } else if (key == "on_event") {
      if (value.is_null()) continue;
      // The ADR's bug: a function object crossed as its repr. Only source text is a filter.
      if (!value.is_string()) return "\"on_event\" must be Lua source text (a string)";
      if (value.get_ref<const std::string&>().size() > max_filter_bytes)
        return "\"on_event\" must be at most 64 KiB of Lua source";
      spec.on_event = value.get<std::string>();
    } else if (key == "debounce_ms") {
      if (auto err = millis_field(value, "debounce_ms", spec.debounce_ms)) return err;
    } else if (key == "max_wait_ms") {
      if (auto err = millis_field(value, "max_wait_ms", spec.max_wait_ms)) return err;
    } else {
      return "unknown field \"" + key + "\" (allowed: name, uri, on_event, debounce_ms, max_wait_ms)";
    }
  }
  if (spec.id.name.empty()) return "\"name\" is required";
  if (spec.uri.empty()) return "\"uri\" is required";
  std::string error;
  // Upstream URIs are routed (and refused with the upstream's words) by the source registry.
  bool upstream = !core::is_stream_uri(spec.uri) && core::has_uri_scheme(spec.uri);
  if (!upstream && !core::parse_stream_uri(spec.uri, &error)) return "\"uri\": " + error;
  return std::nullopt;
}

}  // namespace

route_result api::start_watch(const http_request& req, const caller& who, responder respond) {
  if (draining_) return {error_response(503, "the node is draining; start the watch on another node"), {}};
  json body;
  if (auto bad = parse_json_body(req, body)) return {std::move(*bad), {}};
  persistence::watch_spec spec;
  spec.id.tenant = who->who.tenant;
  if (auto err = to_spec(body, spec)) return {error_response(400, *err), {}};
  // Managing a watch writes its notice stream; it reads what it watches.
  if (!who->who.write.covers_prefix("watch:" + spec.id.name, ""))
    return {forbidden(who, req, "the token has no write grant for watch:" + spec.id.name), {}};
  // A watch's feed is not checked per event, and its notices go to
  // watch:NAME: its creator must be able to read everything it reads. A
  // filter's read_resource/list_resources reach any stream of the tenant.
  std::string ignored;
  if (auto target = core::parse_stream_uri(spec.uri, &ignored)) {
    if (!who->who.read.covers_all_under(target->stream, target->prefix))
      return {forbidden(who, req,
                        "a watch needs a read grant covering every path it reads: the whole stream '" +
                            target->stream + "', or a grant ending in /** above its prefix"),
              {}};
  } else if (!who->who.read.covers_prefix("src:*", "")) {
    return {forbidden(who, req, "watching upstream resources needs a read grant on src:*"), {}};
  }
  if (spec.on_event && !who->who.read.covers_tenant())
    return {
        forbidden(
            who, req,
            "a watch filter can read any stream of the tenant (read_resource); it needs a read grant on *"),
        {}};

  auto request = std::make_shared<actors::watch_start_request>();
  request->spec = spec;
  request->max_watches = limits_of(who).watches;
  request->reply = [respond = std::move(respond), name = spec.id.name,
                    uri = spec.uri](const actors::watch_start_reply& r) {
    if (r.error) return respond(error_response(status_of(r.error->kind), r.error->message));
    respond(json_response(r.replaced ? 200 : 201, {{"name", name}, {"uri", uri}, {"shape", r.shape}}));
  };
  if (cluster_.start_watch) return cluster_.start_watch(std::move(request)), route_result{};
  caf::anon_send(watches_, actors::start_atom::value, actors::watch_start_request_ptr(std::move(request)));
  return {};
}

route_result api::list_watches(std::optional<std::string> name, const caller& who, responder respond) {
  auto request = std::make_shared<actors::watch_list_request>();
  request->tenant = who->who.tenant;
  // Only the watches whose notices the token may read are shown.
  request->reply = [respond = std::move(respond), name = std::move(name),
                    who](const std::vector<actors::watch_info>& list) {
    auto visible = [&](const actors::watch_info& w) {
      return who->who.read.covers_prefix("watch:" + w.name, "");
    };
    if (!name) {
      auto out = json::array();
      for (const auto& w : list)
        if (visible(w)) out.push_back(info_json(w));
      return respond(json_response(200, out));
    }
    for (const auto& w : list)
      if (w.name == *name && visible(w)) return respond(json_response(200, info_json(w)));
    respond(error_response(404, "no watch named '" + *name + "'"));
  };
  if (cluster_.list_watches) return cluster_.list_watches(std::move(request)), route_result{};
  caf::anon_send(watches_, actors::list_atom::value, actors::watch_list_request_ptr(std::move(request)));
  return {};
}

route_result api::stop_watch(const std::string& name, const http_request& req, const caller& who,
                             responder respond) {
  if (!core::valid_watch_name(name)) return {error_response(400, "bad watch name '" + name + "'"), {}};
  if (!who->who.write.covers_prefix("watch:" + name, ""))
    return {forbidden(who, req, "the token has no write grant for watch:" + name), {}};
  auto request = std::make_shared<actors::watch_stop_request>();
  request->id = {who->who.tenant, name};
  request->reply = [respond = std::move(respond)](std::optional<actors::watch_error> error, bool stopped) {
    if (error) return respond(error_response(status_of(error->kind), error->message));
    respond(json_response(200, {{"stopped", stopped}}));
  };
  if (cluster_.stop_watch) return cluster_.stop_watch(std::move(request)), route_result{};
  caf::anon_send(watches_, actors::stop_atom::value, actors::watch_stop_request_ptr(std::move(request)));
  return {};
}

}  // namespace tidings::broker
