#include "core/retry_schedule.hpp"

#include <algorithm>

namespace tidings::core {

retry_wait next_retry_wait(const std::vector<std::chrono::milliseconds>& steps, std::size_t failures,
                           double unit) {
  if (failures < steps.size()) return {steps[failures], false};
  const auto cap = steps.back();
  const double share = retry_jitter * std::clamp(unit, 0.0, 1.0);
  const auto cut =
      std::chrono::milliseconds(static_cast<long long>(static_cast<double>(cap.count()) * share));
  // Never zero: a retry loop without a pause would hammer the upstream.
  return {std::max(cap - cut, std::chrono::milliseconds(1)), true};
}

}  // namespace tidings::core
