#pragma once

// A cluster of real tidingsd processes on loopback for the cluster tests:
// every node gets a temporary data directory, an ephemeral HTTP port and an
// ephemeral cluster port, and registers in a real etcd (ADR 0022) under a
// key prefix of this cluster's own, with a 2 s member lease. The etcd is
// one member shared by every cluster of the test process (started with the
// first), unless a test brings its own (to kill or pause etcd itself).
// Each node's cluster address and id are read from its `cluster.listening`
// log line. Nodes are numbered from 0 in start order.
//
// The destructor SIGKILLs whatever still runs (a graceful stop would hand
// streams around between nodes that are all going away, which only slows
// the teardown) and removes the data directories. When it runs because an
// exception unwinds (a failed REQUIRE), or when TIDINGS_CLUSTER_LOGS is set,
// it first writes every node's log to stderr: a cluster failure is rarely
// understood from one node's side.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace tidings::testing {

// 64 random hex digits: a cluster secret (ADR 0024).
std::string random_cluster_secret();

class cluster_nodes {
 public:
  // Starts `count` nodes with `extra_args` each (after the harness's own
  // flags; "{node}" in one is the node's number) and waits, bounded by `converge_timeout`, until every node
  // lists all of them alive. Throws with the nodes' logs on failure. `etcd`: the test's own etcd (it must
  // outlive the nodes); nullptr: the process's shared one. `distinct_users`: node i runs as uid and gid
  // node_user_base + i (the harness must be root), so iptables rules can
  // tell the nodes' packets apart on loopback (the fault suite).
  explicit cluster_nodes(std::size_t count, std::vector<std::string> extra_args = {},
                         std::chrono::milliseconds converge_timeout = std::chrono::seconds(20),
                         etcd_cluster* etcd = nullptr, bool distinct_users = false);
  static constexpr uid_t node_user_base = 20000;
  ~cluster_nodes();
  cluster_nodes(const cluster_nodes&) = delete;
  cluster_nodes& operator=(const cluster_nodes&) = delete;

  std::size_t size() const { return nodes_.size(); }
  client::endpoint endpoint(std::size_t i) const;
  // "127.0.0.1:PORT", the HTTP address as the admin view and reconnect_url name it.
  std::string http_address(std::size_t i) const;
  const std::string& node_id(std::size_t i) const;
  const std::string& cluster_address(std::size_t i) const;
  // The port of cluster_address(i).
  std::uint16_t cluster_port(std::size_t i) const;
  // The uid node i runs as (distinct_users), or this process's.
  uid_t uid(std::size_t i) const;
  const std::filesystem::path& data_dir(std::size_t i) const;
  // The node's current process (the latest run after a restart).
  tidingsd_process& process(std::size_t i);
  // Not yet reaped: a node that drained by itself counts as running until
  // await_exit() reaps it.
  bool running(std::size_t i) const;
  // Every node's id, in node order, whether it runs or not.
  std::vector<std::string> ids() const;

  void kill9(std::size_t i);
  // SIGTERM (a graceful drain) and wait; the exit status, -1 on timeout.
  int terminate(std::size_t i, std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // For a node that stops by itself (POST /admin/v1/drain): waits for its
  // `node.stopped` line, then reaps it. Its exit status; -1 when it did not
  // stop within `timeout`.
  int await_exit(std::size_t i, std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // Starts a stopped node again on its data directory (its ports are new).
  // Throws when it comes back with another id: the id is kept in the data
  // directory.
  void restart(std::size_t i);

  // The etcd the nodes register in, and this cluster's key prefix there.
  etcd_cluster& etcd() const { return *etcd_; }
  const std::string& etcd_prefix() const { return prefix_; }
  // The secret every node holds (in cluster.secret of its data directory).
  const std::string& secret() const { return secret_; }
  // The flags that make a tidingsd a would-be member of this cluster, with
  // `secret` written to cluster.secret in `dir` (mode 0600).
  std::vector<std::string> member_args(const std::filesystem::path& dir, const std::string& secret) const;

  // Polls every running node's GET /admin/v1/nodes (short, growing pauses)
  // until each lists exactly the running nodes as alive (listed in etcd: a
  // killed node is until its 2 s lease expires) and connected; members
  // that are gone may still be listed, in any other state. Throws with the
  // last views on timeout.
  void await_converged(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Node i's GET /admin/v1/nodes body; throws unless 200 with JSON.
  nlohmann::json nodes_view(std::size_t i) const;

  // The first of prefix0, prefix1, ... whose owner among all the nodes (as
  // core::owner_of places keys of the "default" tenant) is node `owner`;
  // with `successor`, also one that node `successor` would own were `owner`
  // gone, so that a test knows where the stream moves.
  std::string owned_stream(std::size_t owner, const std::string& prefix,
                           std::optional<std::size_t> successor = std::nullopt) const;

  // Every node's stderr, labelled, earlier runs of restarted nodes included.
  std::string logs() const;

 private:
  struct node;
  node& at(std::size_t i);
  const node& at(std::size_t i) const;
  void start(std::size_t i);

  etcd_cluster* etcd_;
  std::string prefix_;  // this cluster's keys in etcd
  std::string secret_;  // fresh per cluster
  bool distinct_users_;
  std::vector<std::string> extra_args_;
  std::vector<std::unique_ptr<node>> nodes_;
  // To tell, in the destructor, an unwinding test from a passing one.
  int exceptions_at_start_ = 0;
};

}  // namespace tidings::testing
