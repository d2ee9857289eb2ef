#pragma once

// Watches in a cluster (ADR 0015): a new watch starts on the owner of
// "watch:<name>" (or where a watch of that name already runs), so its
// filter, debounce and notice stream live on one node; listing and
// stopping ask every member, so a watch is reachable from any node
// whichever node runs it. The node actor forwards what this node's API and
// the other members ask; this actor routes it and runs this node's part.
// Where watches go when members come and go is node_moves.cpp's.

#include <caf/all.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/watch_actors.hpp"
#include "cluster/atoms.hpp"

namespace tidings::cluster {

// The up members' node actors, this node's own included, by member id.
using router_members = std::vector<std::pair<std::string, caf::actor>>;
using router_members_ptr = std::shared_ptr<const router_members>;

// Every request and answer is the serialized protobuf named in atoms.hpp.
using watch_router_actor =
    caf::typed_actor<caf::replies_to<wstart_atom, std::string>::with<std::string>,
                     caf::replies_to<wstart_here_atom, std::string>::with<std::string>,
                     caf::replies_to<wlist_atom, std::string>::with<std::string>,
                     caf::replies_to<wlist_here_atom, std::string>::with<std::string>,
                     caf::replies_to<wstop_atom, std::string, std::string>::with<std::string>,
                     caf::replies_to<wstop_here_atom, std::string, std::string>::with<std::string>,
                     // The watch manager answered a request made here, by token (internal).
                     caf::reacts_to<done_atom, std::uint64_t, std::string>,
                     // Membership changed: whom to ask.
                     caf::reacts_to<members_atom, router_members_ptr>,
                     // This node drains: starts go elsewhere, except watches moved here.
                     caf::reacts_to<drain_atom>>;

struct watch_router_config {
  std::string self_id;
  caf::actor node;  // this node's node actor: told changed_atom and stopping_atom
  actors::watch_manager_actor watches;
  // Placement of a new watch: the member owning `key` ("" for this node).
  std::function<std::string(const std::string& tenant, const std::string& key)> owner_of;
};

struct watch_router_state {
  static inline const char* name = "cluster-watch-router";
  // Not an aggregate: CAF 0.17 would construct one from its actor pointer.
  watch_router_state() = default;

  watch_router_config cfg;
  router_members_ptr members;  // null until the first membership
  std::map<std::uint64_t, caf::typed_response_promise<std::string>> waiting;
  std::uint64_t next_token = 1;
  bool draining = false;
};

watch_router_actor::behavior_type watch_router(watch_router_actor::stateful_pointer<watch_router_state> self,
                                               watch_router_config cfg);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::router_members_ptr)
