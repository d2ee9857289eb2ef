#pragma once

// The one actor a node publishes on its cluster port (ADR 0015), and the
// cluster's wire edge (ADR 0026): every message another member sends comes
// here. It keeps the membership: it acts on what its registrar reads from
// etcd (ADR 0022), dials every member listed there (bounded timeouts, a
// monitor on each peer's node actor, which says only whether a connection
// is up, never whether a member is) and publishes both to the
// cluster_view. The rest it hands to the actor whose job it is: the feed
// server (other members' publishes, pages and feeds), the replica host
// (followers' copies), the handoff (logs moving between members), the
// source host, the watch router and the watch mover.

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/hub_registry.hpp"
#include "actors/source_registry_actor.hpp"
#include "actors/watch_actors.hpp"
#include "cluster/cluster_view.hpp"
#include "cluster/feed_server.hpp"
#include "cluster/handoff.hpp"
#include "cluster/member_table.hpp"
#include "cluster/registrar.hpp"
#include "cluster/replica_host.hpp"
#include "cluster/source_host.hpp"
#include "cluster/watch_mover.hpp"
#include "cluster/watch_router.hpp"
#include "persistence/group_commit.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {

struct node_config {
  member self;  // its cluster address's port may be 0 until start_atom
  // The agreed record (ADR 0022): where members register, and for how long
  // a registration holds without renewal.
  std::shared_ptr<control_plane> plane;
  // The cluster's shared secret and this node's security fingerprint (ADR
  // 0024): they seal its record and prove it to the members it dials.
  std::shared_ptr<const cluster_secret> secret;
  std::string security;
  // Cluster TLS (ADR 0032): connections go through CAF's OpenSSL module,
  // and members' records and joins are bound to their certificates.
  std::shared_ptr<const node_certificate> tls;
  std::string prefix = "/tidings/";
  std::int64_t lease_seconds = 5;
  actors::hub_registry* hubs = nullptr;
  actors::source_registry_actor sources;  // runs the sources other members place here
  actors::watch_manager_actor watches;    // runs the watches placed here
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  cluster_view* view = nullptr;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds dial_interval{1000};
  // This node's counts of sources, watches and sessions (they live in
  // other actors and threads); calls back once, from any thread.
  std::function<void(std::function<void(proto::NodeStats)>)> local_stats;
};

struct node_state {
  static inline const char* name = "cluster-node";

  explicit node_state() : table(member{}) {}

  node_config cfg;
  member_table table;
  registrar_actor registrar;                   // spawned once the cluster port is known
  bool listed = false;                         // the registrar listed the members once
  std::map<std::string, caf::actor> handles;   // connected members' node actors by id
  std::map<caf::actor_addr, std::string> ids;  // and back
  std::set<std::string> dialing;               // addresses with a dial in flight
  // Unconnected members with a lower id, which dial this node, and since
  // when: it dials them only when they have not for a while (dial_unconnected).
  std::map<std::string, caf::actor_clock::time_point> awaited;
  std::uint64_t rebalance_generation = 0;  // the one rebalance due after the quiet time
  source_host_actor source_host;           // the sources other members place here, and their leases
  watch_router_actor watch_router;         // starts, lists and stops watches across the members
  watch_mover_actor watch_mover;           // where watches go as members come and go
  // Asked to wait until the members are listed and dialled (the node starts
  // its watches after that, so their sources are placed by a real view).
  std::vector<caf::response_promise> settle_waiters;
  bool draining = false;

  // Sources this node runs that placement puts on a member that joined:
  // being closed here (`asked`), and closed, with when (`done`, sent with
  // the pins for a while so that their holds follow).
  struct source_returns {
    std::set<actors::stream_key> asked;
    std::map<actors::stream_key, std::chrono::steady_clock::time_point> done;
  } returns;

  std::string pins_sent;  // our Pins, as last sent to pins_peers
  std::set<caf::actor_addr> pins_peers;
  unsigned ticks = 0;  // every tenth sends watch copies and pins again, changed or not

  replica_host_actor replica_host;  // followers' copies of other members' logs
  handoff_actor handoff;            // streams' logs moving between members
  feed_server_actor feed_server;    // other members' publishes, pages and feeds
};

using node_actor = caf::stateful_actor<node_state>;

// Spawn, publish it on the cluster port, then send (start_atom, port).
caf::behavior node(node_actor* self, node_config cfg);

// node_handoff.cpp: the handoff actor's wire edge, rebalances and drains.
caf::result<std::string> on_take(node_actor* self, const std::string& bytes);
std::string on_read(node_actor* self, const std::string& bytes);
// Asks the handoff, after a quiet time, to have the owners of what this
// node's store holds for them take it; then returns sources and watches.
void rebalance(node_actor* self);
void on_rebalance(node_actor* self, std::uint64_t generation);
caf::result<std::string> on_drain(node_actor* self);

// node_actor.cpp: membership changed; tell the view, the registry, the peers.
void on_change(node_actor* self);
bool settled(node_actor* self);
// Answers the start's wait once settled() holds.
void answer_if_settled(node_actor* self);

// node_force.cpp: an operator's forced election (ADR 0021). Answers a JSON
// body with its HTTP status in "status".
caf::result<std::string> on_force(node_actor* self, const actors::stream_key& key, bool accept_loss);

// node_moves.cpp: pins, and what a drain moves out (ADR 0016).
// Sends this node's pinned streams to the peers when they changed.
void sync_pins(node_actor* self);
void on_peer_pins(node_actor* self, const std::string& bytes);
// Draining: the watch mover releases every watch to its new owner and every
// source closes; then `then` runs.
void move_out(node_actor* self, std::function<void()> then);
// Closes each source running here that placement puts on another member
// now (one that joined); their holds follow them there (ADR 0016).
void return_sources(node_actor* self);

// "host:port" -> (host, port); nullopt when malformed.
std::optional<std::pair<std::string, std::uint16_t>> split_address(const std::string& address);

}  // namespace tidings::cluster

// A lease handed from the source registry to the node actor (local only).
