#pragma once

// The broker's side of an SSE session's credential (relay::session_guard):
// each event is checked against the read grants that name its stream, then
// against the tenant's notification scope for that stream, if any. Grants
// decide access; scoping only narrows who is told (the gateway guide's
// notification_filter), and is never consulted for an event the grants deny.

#include <memory>
#include <string>
#include <vector>

#include "broker/auth_service.hpp"
#include "filters/scope_expression.hpp"
#include "relay/session_guard.hpp"

namespace tidings::broker {

class session_access final : public relay::session_guard {
 public:
  // `streams`: the session's stream names in order.
  session_access(session_auth_ptr auth, const auth_service& service, const std::vector<std::string>& streams);

  bool admits(std::size_t index, std::string_view stream, const core::sse_frame& f) override;
  bool admits_all(std::size_t index) const override;
  std::chrono::system_clock::time_point expires_at() const override;
  std::optional<relay::auth_lapse> recheck() override;

 private:
  struct per_stream {
    core::grant_set read;  // the grants naming this stream
    bool whole = false;    // one of them covers every path
    std::optional<notification_scope> scope;
  };

  session_auth_ptr auth_;
  const auth_service& service_;
  std::vector<per_stream> streams_;
  filters::scope_subject subject_;  // built once, for scope expressions
};

// Compiles every scope expression once, so a bad one stops the start or
// the reload instead of silently denying events later.
std::optional<std::string> compile_scopes(const std::vector<tenant_spec>& tenants);

// The first of the tenant's notification scopes whose stream glob matches.
const notification_scope* scope_for(const tenant_spec& tenant, std::string_view stream);

}  // namespace tidings::broker
