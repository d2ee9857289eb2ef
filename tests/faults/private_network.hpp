#pragma once

// Network faults for the fault suite, kept off the machine: the calling
// thread (and every thread and process it starts afterwards) moves into a
// network namespace of its own, with only loopback, no route out and no
// NAT; the namespace and its iptables rules are gone with the process,
// whatever way it ends. Nodes run as distinct users (cluster_nodes'
// distinct_users), so OUTPUT rules matching a node's uid and a peer's port
// cut exactly the pairs a round chooses; the harness (root) and etcd stay
// reachable unless a rule says otherwise.
//
// Needs root (CAP_SYS_ADMIN for the namespace, CAP_NET_ADMIN for the
// rules) and Debian's iptables (scripts/bootstrap installs it).

#include <cstdint>
#include <string>

#include <sys/types.h>

namespace tidings::testing {

// Empty when this process can do it, else why not (the suite skips then).
std::string private_network_unavailable();

// Moves the calling thread into a fresh namespace and brings loopback up.
// Throws std::runtime_error on failure.
void enter_private_network();

class packet_rules {
 public:
  packet_rules() = default;
  ~packet_rules();  // clear()
  packet_rules(const packet_rules&) = delete;
  packet_rules& operator=(const packet_rules&) = delete;

  // Drops the TCP packets processes of `uid` send to `port` (connections
  // they open, and their side of connections opened to them there).
  void drop(uid_t uid, std::uint16_t port);
  // Every rule added here removed: traffic flows again.
  void clear();

 private:
  bool any_ = false;
};

}  // namespace tidings::testing
