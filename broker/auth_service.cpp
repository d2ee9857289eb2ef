#include "broker/auth_service.hpp"

#include <chrono>
#include <mutex>

#include "broker/jwt_verifier.hpp"

namespace tidings::broker {
namespace {

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string joined(const std::string& tenant, const std::string& value) {
  return tenant + '\0' + value;
}

// Only where EventSource, which cannot send headers, needs it: a token in
// a URL ends up in logs and histories, so nowhere else (issue 28).
bool query_token_allowed(const http_request& req) {
  return (req.method == "GET" || req.method == "HEAD") && req.path == "/v1/sse";
}

// Bearer header first, then the query parameter and the cookie that an
// EventSource (which cannot set headers) has to use.
std::optional<std::string> token_of(const http_request& req) {
  if (auto* h = req.header("authorization")) {
    std::string_view v = *h;
    if (v.size() > 7 && (v.substr(0, 7) == "Bearer " || v.substr(0, 7) == "bearer "))
      return std::string(v.substr(7));
    return std::string();  // present but not a bearer token: malformed
  }
  if (auto* q = req.query_one("access_token"); q && query_token_allowed(req)) return *q;
  if (auto* c = req.header("cookie")) {
    std::string_view v = *c;
    while (!v.empty()) {
      auto semi = v.find(';');
      auto part = v.substr(0, semi);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      if (part.starts_with("tidings_token=")) return std::string(part.substr(14));
      if (semi == std::string_view::npos) break;
      v.remove_prefix(semi + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

const tenant_spec* tenant_table::find(std::string_view id) const {
  for (const auto& t : tenants)
    if (t.id == id) return &t;
  return nullptr;
}

session_auth_ptr anonymous_auth() {
  static const session_auth_ptr a = [] {
    auto s = std::make_shared<session_auth>();
    s->who.tenant = "default";
    s->who.subject = "anonymous";
    s->who.expires_at = INT64_MAX;
    std::string unused;
    s->who.read = core::grant_set({*core::parse_grant("*", &unused)});
    s->who.write = s->who.read;
    s->who.admin = true;
    s->anonymous = true;
    return s;
  }();
  return a;
}

auth_service::auth_service(std::vector<tenant_spec> tenants, persistence::store& store)
    : store_(store),
      enabled_(!tenants.empty()),
      tenants_(std::make_shared<tenant_table>(tenant_table{std::move(tenants)})) {}

persistence::status auth_service::load_revocations() {
  std::vector<persistence::revocation> all;
  if (auto s = store_.load_revocations(&all); !s.ok()) return s;
  std::unique_lock lock(mutex_);
  for (const auto& r : all) add_revocation(r);
  return {};
}

tenant_table_ptr auth_service::tenants() const {
  std::shared_lock lock(mutex_);
  return tenants_;
}

auth_outcome auth_service::authenticate(const http_request& req) const {
  if (!enabled_) return {anonymous_auth(), 200, {}, core::token_problem::none};
  auto token = token_of(req);
  auth_outcome out;
  out.status = 401;
  if (!token && req.query_one("access_token")) {
    out.problem = core::token_problem::malformed;
    out.error =
        "access_token in the query string is accepted only on GET /v1/sse (for EventSource); send "
        "Authorization: Bearer TOKEN";
    return out;
  }
  if (!token) {
    out.problem = core::token_problem::malformed;
    out.error =
        "missing token: send Authorization: Bearer TOKEN (or, for EventSource, the access_token query "
        "parameter or the tidings_token cookie)";
    return out;
  }
  if (auto known = verified_.find(*token)) {
    if (!recheck(*known)) return {std::move(known), 200, {}, core::token_problem::none};
    // No longer good: verified afresh below, so the refusal says why.
    verified_.forget(*token);
  }
  auto table = tenants();  // one snapshot for the verify and the key it used
  auto verified = verify_token(*token, table->tenants, now_seconds());
  if (!verified.principal) {
    out.problem = verified.problem;
    out.error = verified.error;
    return out;
  }
  if (revoked(*verified.principal)) {
    out.problem = core::token_problem::revoked;
    out.error = "token revoked";
    return out;
  }
  auto a = std::make_shared<session_auth>();
  a->who = std::move(*verified.principal);
  a->key_id = std::move(verified.key_id);
  if (const auto* t = table->find(a->who.tenant))
    for (std::size_t i = 0; i < t->keys.size(); ++i)
      if (key_id(*t, i) == a->key_id) a->key_material = t->keys[i].material;
  verified_.remember(*token, a);
  return {std::move(a), 200, {}, core::token_problem::none};
}

std::optional<relay::auth_lapse> auth_service::recheck(const session_auth& a) const {
  if (a.anonymous) return std::nullopt;
  // No signature is checked again: the token was verified once, and what can
  // change since is its time, its tenant, the key that verified it and the
  // revocations (a reload must recheck thousands of sessions at once).
  using lapse = relay::auth_lapse;
  if (a.who.expires_at <= now_seconds()) return lapse{"expired", "token expired"};
  auto table = tenants();
  const auto* t = table->find(a.who.tenant);
  if (!t) return lapse{"tenant_removed", "token no longer valid: its tenant is no longer configured"};
  bool key_kept = false;
  for (std::size_t i = 0; i < t->keys.size() && !key_kept; ++i)
    key_kept = key_id(*t, i) == a.key_id && t->keys[i].material == a.key_material;
  if (!key_kept)
    return lapse{"key_removed", "token no longer valid: the key that verified it is no longer configured"};
  if (revoked(a.who)) return lapse{"revoked", "token revoked"};
  return std::nullopt;
}

bool auth_service::revoked(const core::principal& p) const {
  std::shared_lock lock(mutex_);
  if (!p.jti.empty() && revoked_jtis_.contains(joined(p.tenant, p.jti))) return true;
  auto it = revoked_subjects_.find(joined(p.tenant, p.subject));
  // A token without iat could be from any time: revoked with its subject.
  return it != revoked_subjects_.end() && (!p.issued_at || *p.issued_at <= it->second);
}

void auth_service::add_revocation(const persistence::revocation& r) {
  if (r.kind == persistence::revocation_kind::jti) {
    revoked_jtis_.insert(joined(r.tenant, r.value));
  } else {
    auto& at = revoked_subjects_[joined(r.tenant, r.value)];
    at = std::max(at, r.revoked_at_s);
  }
}

persistence::status auth_service::revoke(const std::string& tenant, persistence::revocation_kind kind,
                                         const std::string& value) {
  persistence::revocation r{tenant, kind, value, now_seconds()};
  if (auto s = store_.put_revocation(r); !s.ok()) return s;
  {
    std::unique_lock lock(mutex_);
    add_revocation(r);
  }
  if (on_change_) on_change_();
  return {};
}

std::optional<std::string> auth_service::reload(std::vector<tenant_spec> tenants) {
  if (tenants.empty() != !enabled_)
    return enabled_ ? "the reloaded config has no tenants; turning auth off needs a restart"
                    : "the reloaded config adds tenants; turning auth on needs a restart";
  {
    std::unique_lock lock(mutex_);
    tenants_ = std::make_shared<tenant_table>(tenant_table{std::move(tenants)});
  }
  verified_.clear();  // recheck() would refuse what a reload took away; this frees it sooner
  if (on_change_) on_change_();
  return std::nullopt;
}

}  // namespace tidings::broker
