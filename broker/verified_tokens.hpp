#pragma once

// Bearer tokens verified lately (issue 27): an RS256 or ES256 signature
// costs some 600x the encoding of an event's frame, and a publisher sends
// the same token with every request. An entry is keyed by the SHA-256 of
// the whole token, so only the very token that was verified finds it. What
// can change after a verification (expiry, a revocation, the tenant or the
// key removed by a reload) is checked on every hit by the caller
// (auth_service::recheck, as for live sessions); a failed check forgets
// the entry, and the token is verified afresh, with its refusal's reason.
//
// Bounded: past `capacity` entries the oldest goes, and a token longer than
// max_token_bytes is not kept (its principal, claims parsed, could take tens
// of times its size). Thread-safe: the HTTP I/O threads share one.

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tidings::broker {

struct session_auth;
using session_auth_ptr = std::shared_ptr<const session_auth>;

class verified_tokens {
 public:
  static constexpr std::size_t default_capacity = 1024;
  static constexpr std::size_t max_token_bytes = 2048;
  explicit verified_tokens(std::size_t capacity = default_capacity);

  // What `token` was admitted as, or null.
  session_auth_ptr find(std::string_view token) const;
  void remember(std::string_view token, session_auth_ptr auth);
  void forget(std::string_view token);
  void clear();
  std::size_t size() const;

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, session_auth_ptr> entries_;  // by SHA-256 of the token
  std::deque<std::string> order_;                              // keys, oldest first
};

}  // namespace tidings::broker
