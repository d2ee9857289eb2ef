#pragma once

// Per-tenant limits that need counting: concurrent SSE sessions (per tenant
// and per subject) and the publish rate (a token bucket per tenant). The
// other limits (streams per session, watches, body size) are checked where
// the request is parsed. Counts are per node; docs/security.md says how they
// add up in a cluster.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "broker/tenant_config.hpp"
#include "core/token_bucket.hpp"

namespace tidings::broker {

class usage_limits : public std::enable_shared_from_this<usage_limits> {
 public:
  // A held session slot (released when the last copy goes), or null with
  // the reason in *why.
  std::shared_ptr<const void> acquire_session(const std::string& tenant, const std::string& subject,
                                              const tenant_limits& limits, std::string* why);
  // Admits `events` publishes now, or says how long to wait.
  bool admit_publish(const std::string& tenant, std::size_t events, const tenant_limits& limits,
                     std::chrono::milliseconds* retry_after);

  std::size_t sessions(const std::string& tenant) const;

 private:
  void release(const std::string& tenant, const std::string& subject);

  mutable std::mutex mutex_;
  std::map<std::string, std::size_t> tenant_sessions_;
  std::map<std::pair<std::string, std::string>, std::size_t> subject_sessions_;
  std::map<std::string, core::token_bucket> buckets_;
};

}  // namespace tidings::broker
