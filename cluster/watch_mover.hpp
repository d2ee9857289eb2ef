#pragma once

// Watches follow membership (ADR 0016, its issue 26 amendments):
// - Every member sends its watch specs to the others whenever they change
//   (WatchCopies). When a member is lost, its copies become orphans on every
//   survivor; the survivor that now owns "watch:<name>" starts each one, and
//   all of them keep the orphan until they see it run somewhere.
// - Two members running one watch keep it where rendezvous hashing over the
//   two puts it; the other stops its own. A copy that does not run never
//   wins.
// - A member that joins gets the watches placement puts there, handed over
//   with their position, once it has restored its own. A member that comes
//   back does not restore a stored watch another member runs now: that
//   member hands it back, with its newer position.
// - A draining member releases each watch to its new owner with its
//   position and forgets it once the new owner runs it.
// The node actor tells this actor what it needs of membership and forwards
// what peers send; this actor sends its copies to the peers' node actors.

#include <caf/all.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/watch_actors.hpp"
#include "cluster/atoms.hpp"
#include "persistence/store.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {

// The members as this node acts on them now.
struct mover_members {
  std::vector<std::string> placement;  // up and not draining: where watches go
  struct peer {
    caf::actor node;  // its node actor; null while not connected
    bool draining = false;
  };
  std::map<std::string, peer> up;  // the other members that are up
};
using mover_members_ptr = std::shared_ptr<const mover_members>;

using returns_atom = caf::atom_constant<caf::atom("cwreturns")>;
using move_out_atom = caf::atom_constant<caf::atom("cwmoveout")>;
using restore_watches_atom = caf::atom_constant<caf::atom("cwrestore")>;

using watch_mover_actor = caf::typed_actor<
    // Membership changed.
    caf::reacts_to<members_atom, mover_members_ptr>,
    // A member is gone: its copies become orphans.
    caf::reacts_to<member_gone_atom, std::string>,
    // A peer's WatchCopies.
    caf::reacts_to<wcopy_atom, std::string>,
    // This node's own WatchCopies, read from the watch manager (internal).
    caf::reacts_to<copies_atom, std::string>,
    // Read this node's specs again and send them where they changed
    // (`again`: to every peer, changed or not).
    caf::reacts_to<tick_atom, bool>,
    // A watch is being stopped everywhere: its orphaned copy is forgotten
    // (answered once it is, so the stop comes after any start from it).
    caf::replies_to<stopping_atom, std::string, std::string>::with<bool>,
    // Membership settled: hand joined members the watches placed there.
    caf::reacts_to<returns_atom>,
    // The node starts: have the watch manager restore its stored watches,
    // once every up member said what it runs (or after a bound).
    caf::reacts_to<restore_watches_atom>,
    // Draining: release every watch to its new owner; answers when done or
    // after a bound.
    caf::replies_to<move_out_atom>::with<bool>,
    // How many copies of other members' watches this node keeps.
    caf::replies_to<stats_atom>::with<std::uint64_t>,
    // The next step of a move (internal).
    caf::reacts_to<actors::task_atom, actors::actor_task>>;

struct watch_mover_config {
  std::string self_id;
  caf::actor node;  // this node's node actor: told pins_due_atom
  actors::watch_manager_actor watches;
  // The member that owns `key` now, pins included ("" for this node).
  std::function<std::string(const std::string& tenant, const std::string& key)> owner_of;
};

struct watch_mover_state {
  static inline const char* name = "cluster-watch-mover";
  // Not an aggregate: CAF 0.17 would construct one from its actor pointer.
  watch_mover_state() = default;

  watch_mover_config cfg;
  mover_members_ptr members = std::make_shared<const mover_members>();
  bool draining = false;
  // Other members' specs, by member, with when each came (a count of the
  // copies heard so far: `heard`).
  struct peer_copies {
    proto::WatchCopies list;
    std::uint64_t heard = 0;
  };
  std::map<std::string, peer_copies> copies;
  std::uint64_t heard = 0;
  // This node's watches: running, and since which copy heard.
  struct local_copy {
    bool running = false;
    std::uint64_t since = 0;
  };
  std::map<persistence::watch_id, local_copy> local;
  // Copies of lost members' watches not yet seen running anywhere (with the
  // member they came from).
  std::map<persistence::watch_id, std::pair<std::string, proto::WatchStart>> orphans;
  // Watches being started here from an orphan or a failed return, stopped
  // here as a duplicate, or handed to the member placement puts them on.
  std::set<persistence::watch_id> adopting, yielding, returning;
  // Our copies as last sent, and to which peers' node actors.
  std::string sent;
  std::set<caf::actor_addr> sent_to;
  // The node asked for its restore, which waits for the peers' copies.
  bool restore_due = false;
};

watch_mover_actor::behavior_type watch_mover(watch_mover_actor::stateful_pointer<watch_mover_state> self,
                                             watch_mover_config cfg);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::mover_members_ptr)
