#pragma once

// The registrar: this node's membership in the cluster's agreed record
// (ADR 0022). It registers the node under a lease, renews the lease, and
// tells the node actor exactly which members the record lists, never what
// the node concludes from its own connections.
//
//   granting ──lease──> putting ──put──> listing ──list──> watching
//      ^                                                      │
//      └───────── lapsed (lease gone, or not renewed in time) ┘
//
// Before this node is listed it is told nothing; once its registration
// may have lapsed it is told so (lapsed_atom) before any later list, so a
// node that was paused or cut off past its lease never acts on members
// seen after that without first learning it was gone itself. The
// deadline is measured from when the last successful renewal was sent:
// the record cannot expire the lease earlier than that plus its TTL.
//
// Records are sealed with the cluster's secret (ADR 0024). One this node
// cannot open, or with another security fingerprint, is refused and logged
// (cluster.member_refused), as is a sealed record under another member's
// key. When refused records are at least as many as accepted ones, this
// node lapses into a new life and is then told of no members at all (it
// owns nothing) rather than of the ones it accepts: the other side of such
// a split sees the same count the other way round, and two halves each
// placing every stream on themselves would hand out the same cursors twice.

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/atoms.hpp"
#include "cluster/cluster_secret.hpp"
#include "cluster/control_plane.hpp"
#include "cluster/member_table.hpp"
#include "cluster/node_certificate.hpp"

namespace tidings::cluster {

struct agreed_members {
  std::int64_t revision = 0;    // the record's revision this list is as of
  std::vector<member> members;  // this node included
};
using agreed_members_ptr = std::shared_ptr<const agreed_members>;
using plane_kvs_ptr = std::shared_ptr<const std::vector<plane_kv>>;
using plane_changes_ptr = std::shared_ptr<const std::vector<plane_change>>;

// To the listener: (agreed_atom, agreed_members_ptr) and (lapsed_atom,
// int64 incarnation): the life this node registers with from now on.
using agreed_atom = caf::atom_constant<caf::atom("magreed")>;
using lapsed_atom = caf::atom_constant<caf::atom("mlapsed")>;
// The node's asks.
using leave_atom = caf::atom_constant<caf::atom("mleave")>;
// The control plane's answers, each with the attempt (registration) or
// watch it belongs to: older ones are dropped.
using granted_atom = caf::atom_constant<caf::atom("mgranted")>;
using put_done_atom = caf::atom_constant<caf::atom("mput")>;
using renewed_atom = caf::atom_constant<caf::atom("mrenewed")>;
using listed_atom = caf::atom_constant<caf::atom("mlisted")>;
using changed_atom = caf::atom_constant<caf::atom("mchanged")>;
using unwatched_atom = caf::atom_constant<caf::atom("munwatch")>;

using registrar_actor = caf::typed_actor<
    // This node drains: its record says so (others stop placing keys here).
    caf::reacts_to<drain_atom>,
    // Leave: revoke the lease (others see this node go at once).
    caf::replies_to<leave_atom>::with<bool>,
    caf::reacts_to<tick_atom>,                  // renew, check the deadline
    caf::reacts_to<retry_atom, std::uint64_t>,  // a failed step, again
    caf::reacts_to<granted_atom, std::uint64_t, std::string, std::int64_t, std::int64_t>,
    caf::reacts_to<put_done_atom, std::uint64_t, std::string>,
    caf::reacts_to<renewed_atom, std::uint64_t, std::string, std::int64_t>,
    caf::reacts_to<listed_atom, std::uint64_t, std::string, plane_kvs_ptr, std::int64_t>,
    caf::reacts_to<changed_atom, std::uint64_t, plane_changes_ptr, std::int64_t>,
    caf::reacts_to<unwatched_atom, std::uint64_t, std::string>>;

struct registrar_config {
  member self;  // its addresses as other nodes dial them
  // Seals this node's record and opens the others' (ADR 0024); a record
  // it cannot open, or whose security fingerprint is not `security`, is
  // refused: not a member.
  std::shared_ptr<const cluster_secret> secret;
  std::string security;
  // With cluster TLS (ADR 0032): a record whose certificate the cluster CA
  // did not sign is refused too.
  std::shared_ptr<const node_certificate> tls;
  std::string prefix;  // the cluster's keys ("/tidings/"); members under prefix + "members/"
  std::int64_t lease_seconds = 5;
  std::shared_ptr<control_plane> plane;
  caf::actor listener;  // the node actor
};

struct registrar_state {
  static inline const char* name = "cluster-registrar";

  registrar_config cfg;
  enum class step { granting, putting, listing, watching, leaving } at = step::granting;
  std::uint64_t attempt = 0;  // one registration; answers of older ones are dropped
  std::int64_t lease = 0;
  std::int64_t ttl = 0;  // seconds, as granted
  // When the request that last renewed the lease (or granted it) was sent:
  // the lease holds at least until then + ttl.
  caf::actor_clock::time_point renewed_at{};
  caf::actor_clock::time_point renewal_sent{};
  bool renewing = false;
  bool listed_self = false;  // the listener was told of a list holding this node
  std::int64_t revision = 0;
  std::uint64_t watch = 0;                     // the watch whose changes count
  std::map<std::string, member> members;       // by key, as the record holds them
  std::map<std::string, std::string> refused;  // by key: why that record is not a member's
  // At least as many records refused as accepted (this node's own among
  // them): this node reports no members, so it owns nothing, and steps
  // aside as a new life.
  bool outvoted = false;
  std::chrono::milliseconds pause{0};  // before the next try of a failed step
};

registrar_actor::behavior_type registrar(registrar_actor::stateful_pointer<registrar_state> self,
                                         registrar_config cfg);

// The key this node registers under.
std::string member_key(const std::string& prefix, const std::string& id);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::agreed_members_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::plane_kvs_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::plane_changes_ptr)
