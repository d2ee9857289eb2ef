#pragma once

// The cluster tidings-load starts for itself (--scenario cluster or failover
// with --tidingsd): an etcd of its own (etcd_process, 1 or 3 members) and M
// node_processes on
// loopback, each with a fresh data directory, --cluster-listen 127.0.0.1:0
// and --etcd naming that etcd, as an operator would bring a cluster up. It
// is ready once node 1's admin view lists all M alive.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "apps/tidings_load/etcd_process.hpp"
#include "apps/tidings_load/node_process.hpp"
#include "client/http_client.hpp"

namespace tidings::load {

class cluster_nodes {
 public:
  // Every node's --member-lease-seconds (etcd keeps a lease this long
  // without renewal: a killed node's streams wait about this long).
  static constexpr int lease_seconds = 2;

  // Throws std::runtime_error (with the nodes' last log lines) when a node
  // does not come up within `start_timeout` or the cluster does not converge
  // within `converge_timeout`; what did start is stopped first.
  cluster_nodes(const std::string& binary, std::size_t count, const std::vector<std::string>& extra_args,
                const std::string& token, std::chrono::milliseconds start_timeout,
                std::chrono::milliseconds converge_timeout, std::size_t etcd_members = 1);
  ~cluster_nodes();
  cluster_nodes(const cluster_nodes&) = delete;
  cluster_nodes& operator=(const cluster_nodes&) = delete;

  std::size_t size() const { return nodes_.size(); }
  const node_process& node(std::size_t i) const { return *nodes_[i]; }
  node_process& node(std::size_t i) { return *nodes_[i]; }
  // HTTP endpoints and pids, in node order.
  std::vector<client::endpoint> endpoints() const;
  std::vector<pid_t> pids() const;

  // The first name prefix + k (k = 0, 1, ...) that placement puts on node
  // i while every node is up, in the default tenant (core::owner_of over
  // the nodes' ids, as each node computes it).
  std::string stream_owned_by(std::size_t i, const std::string& prefix) const;

  // SIGTERM to one node after the other, last started first, so that each
  // drain hands its streams to nodes that still run (stopped all at once,
  // every drain waits out its timeout for successors that are gone), and
  // SIGKILL to those still running once `timeout` has passed in all; the
  // data directories go. Prints the log tail of every node that did not
  // exit cleanly and returns how many those were.
  std::size_t stop(std::chrono::milliseconds timeout);

 private:
  // The nodes' shared cluster secret (ADR 0024), in a file of its own
  // directory; removed with the object.
  struct secret_file {
    secret_file();
    ~secret_file();
    std::filesystem::path dir, path;
  };
  secret_file secret_;
  std::unique_ptr<etcd_process> etcd_;  // outlives the nodes (declared first)
  std::vector<std::unique_ptr<node_process>> nodes_;
};

}  // namespace tidings::load
