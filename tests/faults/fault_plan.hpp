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
  // Partitions (DROP rules, private_network.hpp), healed after `hold`:
  cut_pair,  // the target and `peer` cut apart; both reach the third node and etcd
  one_way,   // what the target sends to `peer` is dropped; the other way flows
  isolate,   // the target cut from both other nodes; it reaches etcd
  cut_etcd,  // the target cut from etcd; it reaches the other nodes
  cut_all,   // the target cut from the other nodes and from etcd
};

// Which node, by its part in the round's stream.
enum class fault_target { owner, follower, other };

struct fault_step {
  fault_kind kind = fault_kind::pause;
  fault_target target = fault_target::owner;
  fault_target peer = fault_target::follower;  // cut_pair, one_way: never the target
  std::chrono::milliseconds after{0};
  std::chrono::milliseconds hold{0};
  int etcd_member = 0;  // etcd_member only
};

struct fault_scenario {
  std::string name;
  std::vector<fault_kind> kinds;  // one drawn per round
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

// Whether the step needs the private network (a partition).
bool is_partition(fault_kind kind);

}  // namespace tidings::testing
