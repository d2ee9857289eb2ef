#pragma once

// How long a source waits before its next subscribe attempt (issue 24,
// "sources that heal themselves"): the configured steps first (1, 2, 4, 8,
// 16 s by default), then the last step for ever, each of those waits
// shortened by up to a fifth at random so that the sources of one upstream
// that went away do not all come back in the same instant. The random
// number comes from the caller, so tests choose it.

#include <chrono>
#include <cstddef>
#include <vector>

namespace tidings::core {

struct retry_wait {
  std::chrono::milliseconds wait{0};
  bool past_steps = false;  // the steps are used up: the source is `retrying`
};

// `failures`: the attempts that failed in a row since the subscription
// ended (0 before the first one); `unit`: a random number in [0, 1).
// Steps must not be empty.
retry_wait next_retry_wait(const std::vector<std::chrono::milliseconds>& steps, std::size_t failures,
                           double unit);

// The share of the cap a retry past the steps may be shortened by.
inline constexpr double retry_jitter = 0.2;

}  // namespace tidings::core
