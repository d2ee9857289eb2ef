#pragma once

// Who is asking, and may they still. Every request but /healthz and inbound
// webhooks (their URL token is the credential) is authenticated here when
// tenants are configured; with none, the node serves the single tenant
// `default` to anyone on loopback (config refuses any other address then).
//
// Live sessions are re-checked, not trusted: a revocation (persisted in the
// store) or a reload calls the change listener, which makes every SSE
// session call recheck() within the second.

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "broker/http_types.hpp"
#include "broker/tenant_config.hpp"
#include "broker/verified_tokens.hpp"
#include "core/claims.hpp"
#include "persistence/store.hpp"
#include "relay/session_guard.hpp"

namespace tidings::broker {

// One admitted credential; a session keeps it for its whole life.
struct session_auth {
  core::principal who;
  std::string key_id;        // the key that verified it ("<tenant>#<kid or index>")
  std::string key_material;  // and what that key was, so a reload can tell it changed
  bool anonymous = false;    // the no-auth single-tenant mode
};

struct auth_outcome {
  session_auth_ptr auth;  // null: refused with status/error
  unsigned status = 200;
  std::string error;
  core::token_problem problem = core::token_problem::none;
};

// The configured tenants as one immutable snapshot; a reload swaps it.
struct tenant_table {
  std::vector<tenant_spec> tenants;
  const tenant_spec* find(std::string_view id) const;
};
using tenant_table_ptr = std::shared_ptr<const tenant_table>;

class auth_service {
 public:
  auth_service(std::vector<tenant_spec> tenants, persistence::store& store);

  persistence::status load_revocations();
  bool enabled() const { return enabled_; }
  tenant_table_ptr tenants() const;

  auth_outcome authenticate(const http_request& req) const;
  // nullopt while the credential still holds, else why it no longer does.
  std::optional<relay::auth_lapse> recheck(const session_auth& a) const;

  persistence::status revoke(const std::string& tenant, persistence::revocation_kind kind,
                             const std::string& value);
  // Swaps in new tenants; an error (and no change) when the mode would flip.
  std::optional<std::string> reload(std::vector<tenant_spec> tenants);
  // Called after every revocation and reload (from the calling thread).
  void on_change(std::function<void()> f) { on_change_ = std::move(f); }

 private:
  bool revoked(const core::principal& p) const;
  void add_revocation(const persistence::revocation& r);

  persistence::store& store_;
  const bool enabled_;
  mutable std::shared_mutex mutex_;
  tenant_table_ptr tenants_;
  std::unordered_set<std::string> revoked_jtis_;                    // tenant '\0' jti
  std::unordered_map<std::string, std::int64_t> revoked_subjects_;  // tenant '\0' sub -> at
  std::function<void()> on_change_;
  // Verified lately: a hit skips the signature check, never recheck().
  mutable verified_tokens verified_;
};

// A principal for the no-auth mode: tenant `default`, every grant, admin.
session_auth_ptr anonymous_auth();

}  // namespace tidings::broker
