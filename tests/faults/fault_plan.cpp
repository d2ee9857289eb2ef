#include "tests/faults/fault_plan.hpp"

#include <random>

namespace tidings::testing {

using std::chrono::milliseconds;

const std::vector<fault_scenario>& fault_scenarios() {
  static const std::vector<fault_scenario> all = {
      {"pause", {fault_kind::pause}, milliseconds(500), milliseconds(4000)},
      {"kill", {fault_kind::kill}, milliseconds(200), milliseconds(3000)},
      {"restart", {fault_kind::restart}, milliseconds(200), milliseconds(1500)},
      {"etcd-member", {fault_kind::etcd_member}, milliseconds(500), milliseconds(3000)},
      {"partition-nodes",
       {fault_kind::cut_pair, fault_kind::one_way, fault_kind::isolate},
       milliseconds(500),
       milliseconds(4000)},
      {"partition-etcd", {fault_kind::cut_etcd, fault_kind::cut_all}, milliseconds(500), milliseconds(4000)},
  };
  return all;
}

fault_step plan_round(const fault_scenario& scenario, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto between = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  fault_step s;
  s.kind =
      scenario
          .kinds[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(scenario.kinds.size()) - 1))];
  s.target = static_cast<fault_target>(between(0, 2));
  s.peer = static_cast<fault_target>((static_cast<int>(s.target) + between(1, 2)) % 3);
  s.after = milliseconds(between(200, 1200));
  s.hold = milliseconds(between(scenario.min_hold.count(), scenario.max_hold.count()));
  s.etcd_member = static_cast<int>(between(0, 2));
  return s;
}

std::string describe(const fault_step& step) {
  static const char* kinds[] = {
      "pause",        "kill -9",   "SIGTERM",       "kill -9 of etcd member", "cut apart",
      "one-way drop", "isolation", "cut from etcd", "cut from everything"};
  static const char* targets[] = {"owner", "follower", "other node"};
  const auto kind = static_cast<int>(step.kind);
  std::string out = kinds[kind];
  if (step.kind == fault_kind::etcd_member) {
    out += " " + std::to_string(step.etcd_member);
  } else {
    out += std::string(" of the ") + targets[static_cast<int>(step.target)];
    if (step.kind == fault_kind::cut_pair)
      out += std::string(" and the ") + targets[static_cast<int>(step.peer)];
    if (step.kind == fault_kind::one_way)
      out += std::string(" towards the ") + targets[static_cast<int>(step.peer)];
  }
  out +=
      " after " + std::to_string(step.after.count()) + " ms for " + std::to_string(step.hold.count()) + " ms";
  return out;
}

bool is_partition(fault_kind kind) {
  return kind == fault_kind::cut_pair || kind == fault_kind::one_way || kind == fault_kind::isolate ||
         kind == fault_kind::cut_etcd || kind == fault_kind::cut_all;
}

}  // namespace tidings::testing
