#include "tests/faults/fault_plan.hpp"

#include <random>

namespace tidings::testing {

using std::chrono::milliseconds;

const std::vector<fault_scenario>& fault_scenarios() {
  static const std::vector<fault_scenario> all = {
      {"pause", fault_kind::pause, milliseconds(500), milliseconds(4000)},
      {"kill", fault_kind::kill, milliseconds(200), milliseconds(3000)},
      {"restart", fault_kind::restart, milliseconds(200), milliseconds(1500)},
      {"etcd-member", fault_kind::etcd_member, milliseconds(500), milliseconds(3000)},
  };
  return all;
}

fault_step plan_round(const fault_scenario& scenario, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto between = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  fault_step s;
  s.kind = scenario.kind;
  s.target = static_cast<fault_target>(between(0, 2));
  s.after = milliseconds(between(200, 1200));
  s.hold = milliseconds(between(scenario.min_hold.count(), scenario.max_hold.count()));
  s.etcd_member = static_cast<int>(between(0, 2));
  return s;
}

std::string describe(const fault_step& step) {
  static const char* kinds[] = {"pause", "kill -9", "SIGTERM", "kill -9 of etcd member"};
  static const char* targets[] = {"owner", "follower", "other node"};
  std::string out = kinds[static_cast<int>(step.kind)];
  out += step.kind == fault_kind::etcd_member
             ? " " + std::to_string(step.etcd_member)
             : std::string(" of the ") + targets[static_cast<int>(step.target)];
  out +=
      " after " + std::to_string(step.after.count()) + " ms for " + std::to_string(step.hold.count()) + " ms";
  return out;
}

}  // namespace tidings::testing
