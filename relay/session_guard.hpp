#pragma once

// What an SSE session asks about its credential: whether each event may be
// written to it (grants, then notification scoping), when the credential
// expires, and whether it still holds after a revocation or reload. The
// broker implements it; the session only calls it, on its own thread.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/sse_frame.hpp"

namespace tidings::relay {

// Why a credential stopped holding: `kind` is a metric label (expired,
// revoked, key_removed, tenant_removed), `reason` the text the client reads.
struct auth_lapse {
  std::string_view kind;
  std::string reason;
};

class session_guard {
 public:
  virtual ~session_guard() = default;
  // The session's stream `index` (named `stream`) has event `f`.
  virtual bool admits(std::size_t index, std::string_view stream, const core::sse_frame& f) = 0;
  // Whether admits() is true for every event of stream `index`, for as long
  // as the credential holds: the session then skips the per-event call (a
  // virtual call and two cache misses per delivery at 5 000 sessions).
  virtual bool admits_all(std::size_t index) const = 0;
  // system_clock::time_point::max() when it never expires.
  virtual std::chrono::system_clock::time_point expires_at() const = 0;
  // nullopt while the credential holds, else why the session must end.
  virtual std::optional<auth_lapse> recheck() = 0;
};

}  // namespace tidings::relay
