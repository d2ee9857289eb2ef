// POST /admin/v1/tokens/revoke, POST /admin/v1/reload

#include "broker/api.hpp"
#include "broker/json_body.hpp"

namespace tidings::broker {

using json = nlohmann::json;

// {"jti": "..."} or {"sub": "..."}, within the admin's own tenant.
route_result api::revoke_tokens(const http_request& req, const caller& who) {
  json body;
  if (auto bad = parse_json_body(req, body)) return {std::move(*bad), {}};
  if (!body.is_object() || body.size() != 1 || !(body.contains("jti") || body.contains("sub")))
    return {error_response(400, "the body names exactly one of {\"jti\": ID} or {\"sub\": SUBJECT}"), {}};
  const bool by_jti = body.contains("jti");
  const auto& value = by_jti ? body["jti"] : body["sub"];
  if (!value.is_string() || value.get_ref<const std::string&>().empty() ||
      value.get_ref<const std::string&>().size() > 512)
    return {error_response(400, std::string(by_jti ? "jti" : "sub") + " must be a string of 1 to 512 bytes"),
            {}};
  auto kind = by_jti ? persistence::revocation_kind::jti : persistence::revocation_kind::subject;
  if (auto s = security_.auth.revoke(who->who.tenant, kind, value.get<std::string>()); !s.ok())
    return {error_response(503, "revocation not stored: " + s.message()), {}};
  security_.audit.record("revoke", {{"tenant", who->who.tenant},
                                    {"by", who->who.subject},
                                    {by_jti ? "jti" : "sub", value.get<std::string>()}});
  return {json_response(200, {{"revoked", {{by_jti ? "jti" : "sub", value}}}, {"tenant", who->who.tenant}}),
          {}};
}

route_result api::reload_config(const caller& who) {
  auto [status, body] = security_.reload();
  // The node's file holds every tenant; a tenant's admin learns only that it
  // failed (the node's log and the audit line have the reason).
  if (status != 200 && !who->anonymous) {
    security_.audit.record("reload", {{"tenant", who->who.tenant},
                                      {"by", who->who.subject},
                                      {"via", "POST /admin/v1/reload"},
                                      {"status", status},
                                      {"result", body}});
    return {error_response(status, "the config did not reload; the node's log says why"), {}};
  }
  security_.audit.record("reload", {{"tenant", who->who.tenant},
                                    {"by", who->who.subject},
                                    {"via", "POST /admin/v1/reload"},
                                    {"status", status},
                                    {"result", body}});
  return {json_response(status, body), {}};
}

}  // namespace tidings::broker
