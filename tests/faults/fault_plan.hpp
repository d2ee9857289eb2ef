#pragma once

// What one round of the fault suite does, drawn from a seed so that a
// failing round runs again the same way (TIDINGS_FAULT_SEED). Pure.
//
// A round: traffic starts (publishers through every node, a session on
// every node), the fault hits one member after `after`, lasts `hold`, is
// healed, traffic ends, and everything is read back through every node.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tidings::testing {

enum class fault_kind {
  pause,        // SIGSTOP for `hold`, then SIGCONT
  kill,         // kill -9, restarted on its data after `hold`
  restart,      // SIGTERM (a graceful drain), restarted after `hold`
  etcd_member,  // kill -9 of one etcd member of three, restarted after `hold`
};

// Which node, by its part in the round's stream.
enum class fault_target { owner, follower, other };

struct fault_step {
  fault_kind kind = fault_kind::pause;
  fault_target target = fault_target::owner;
  std::chrono::milliseconds after{0};
  std::chrono::milliseconds hold{0};
  int etcd_member = 0;  // etcd_member only
};

struct fault_scenario {
  std::string name;
  fault_kind kind;
  // Holds are drawn from [min_hold, max_hold]; the member lease in the
  // suite is 2 s, so a range across it covers faults shorter and longer.
  std::chrono::milliseconds min_hold;
  std::chrono::milliseconds max_hold;
};

// The scenarios the suite runs, each its own test case.
const std::vector<fault_scenario>& fault_scenarios();

// The round's step: target, start and hold drawn from `seed`.
fault_step plan_round(const fault_scenario& scenario, std::uint64_t seed);

std::string describe(const fault_step& step);

}  // namespace tidings::testing
