#include "broker/usage_limits.hpp"

namespace tidings::broker {

std::shared_ptr<const void> usage_limits::acquire_session(const std::string& tenant,
                                                          const std::string& subject,
                                                          const tenant_limits& limits, std::string* why) {
  std::lock_guard lock(mutex_);
  auto& per_tenant = tenant_sessions_[tenant];
  auto& per_subject = subject_sessions_[{tenant, subject}];
  if (per_tenant >= limits.sse_sessions) {
    *why = "too many SSE sessions for this tenant (limit " + std::to_string(limits.sse_sessions) + ")";
    return nullptr;
  }
  if (per_subject >= limits.sse_sessions_per_subject) {
    *why = "too many SSE sessions for this subject (limit " +
           std::to_string(limits.sse_sessions_per_subject) + ")";
    return nullptr;
  }
  ++per_tenant;
  ++per_subject;
  // The slot may outlive this object (a session ending during shutdown); a
  // weak reference keeps a late release harmless.
  struct slot {
    std::weak_ptr<usage_limits> owner;
    std::string tenant, subject;
    ~slot() {
      if (auto self = owner.lock()) self->release(tenant, subject);
    }
  };
  auto held = std::make_shared<slot>();
  held->owner = weak_from_this();
  held->tenant = tenant;
  held->subject = subject;
  return held;
}

void usage_limits::release(const std::string& tenant, const std::string& subject) {
  std::lock_guard lock(mutex_);
  if (auto it = tenant_sessions_.find(tenant); it != tenant_sessions_.end() && it->second > 0) --it->second;
  auto key = std::make_pair(tenant, subject);
  if (auto it = subject_sessions_.find(key); it != subject_sessions_.end()) {
    if (it->second <= 1)
      subject_sessions_.erase(it);
    else
      --it->second;
  }
}

bool usage_limits::admit_publish(const std::string& tenant, std::size_t events, const tenant_limits& limits,
                                 std::chrono::milliseconds* retry_after) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(tenant);
  if (it == buckets_.end())
    it = buckets_.emplace(tenant, core::token_bucket(limits.publish_rate, limits.publish_burst, now)).first;
  else  // a reload may have changed the limits
    it->second.reconfigure(limits.publish_rate, limits.publish_burst);
  auto n = static_cast<double>(events);
  if (it->second.take(n, now)) return true;
  *retry_after = it->second.wait_for(n, now);
  return false;
}

std::size_t usage_limits::sessions(const std::string& tenant) const {
  std::lock_guard lock(mutex_);
  auto it = tenant_sessions_.find(tenant);
  return it == tenant_sessions_.end() ? 0 : it->second;
}

}  // namespace tidings::broker
