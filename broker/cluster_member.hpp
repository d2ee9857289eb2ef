#pragma once

// This process as a member of a cluster: the CAF middleman port, the node
// actor on it, and the view the hub registry routes by (docs/cluster.md,
// ADR 0015). Made only when cluster-listen is set.

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/hub_registry.hpp"
#include "broker/api.hpp"
#include "broker/config.hpp"
#include "cluster/cluster_view.hpp"
#include "cluster/control_plane.hpp"

namespace tidings::broker {

// The CAF settings a cluster member needs before its actor system exists:
// the middleman, and heartbeats so that a hung peer is noticed (the same on
// every node, or a node with them drops a healthy idle peer; STACK.md).
// With cluster TLS also CAF's OpenSSL module, which reads the copies of the
// files returned here: keep them until the actor system is gone. Empty
// *error when all is set.
std::unique_ptr<cluster::frozen_tls_files> configure_cluster(caf::actor_system_config& cfg, const config& c,
                                                             std::string* error);

class cluster_member {
 public:
  struct identity {
    std::string node_id;
    std::string http_address;  // what clients are sent to
    std::int64_t incarnation = 0;
  };
  // Publishes the node actor on cluster-listen and registers in etcd
  // (ADR 0022); nullptr with *error set when the port cannot be opened.
  static std::unique_ptr<cluster_member> start(
      caf::actor_system& system, const config& cfg, const identity& who, actors::hub_registry& hubs,
      actors::source_registry_actor sources, actors::watch_manager_actor watches, persistence::store& store,
      persistence::group_committer& committer,
      std::function<void(std::function<void(local_node_counts)>)> counts, std::string* error);
  ~cluster_member();

  // Waits (at most `timeout`) until the members are listed and dialled.
  bool await_settled(std::chrono::milliseconds timeout);
  // Restores the stored watches, but not those another member runs now
  // (it hands them back with their position).
  void restore_watches();
  // Every member as JSON rows (GET /admin/v1/nodes); nullopt on timeout.
  void nodes(std::function<void(std::optional<std::string>)> reply);
  // What the routes use: placement, reads at the owner, the nodes view.
  cluster_hooks hooks();
  // Graceful drain: stop taking keys, hand every stream this node holds to
  // its new owner (with its log), and return once they all have it or the
  // deadline passed. Returns how many streams were not taken.
  std::size_t drain();
  // A member clients can reconnect to (not this node, not draining):
  // "http://host:port", or "" when there is none.
  std::string reconnect_url() const;
  // Reads a stream's log at its owner (another member).
  void read(const std::string& tenant, const std::string& stream, std::uint64_t after_seq, std::size_t max,
            std::function<void(remote_log)> done);
  // Leaves the cluster: the lease is revoked, the node actor ends, peers
  // see it go.
  void stop();

 private:
  cluster_member(caf::actor_system& system, std::unique_ptr<cluster::cluster_view> view);
  // Asks the node actor `message` (a short-lived actor makes the request,
  // so no I/O thread blocks on it); `done` gets the reply, or nullopt when
  // there was none within `timeout`.
  void ask(std::chrono::milliseconds timeout, caf::message message,
           std::function<void(std::optional<std::string>)> done);
  caf::actor_system& system_;
  std::unique_ptr<cluster::cluster_view> view_;
  actors::hub_registry* hubs_ = nullptr;
  caf::actor node_;
  std::shared_ptr<cluster::control_plane> plane_;
};

}  // namespace tidings::broker
