#pragma once

// The cluster's members as one node acts on them: exactly what etcd lists
// (ADR 0022), never what the node concludes from its own connections. Pure
// logic (no actors, no clock) so the rules are unit-tested.
//
// A member is identified by its node id (kept in its store, so a restart on
// the same data is the same member) and registers under an etcd lease; its
// incarnation is its start time. A member etcd stops listing (its lease
// expired or was revoked) is down, whatever this node's connection to it
// says; this node itself counts as a member only while its own
// registration holds.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tidings::cluster {

struct member {
  std::string id;
  std::string cluster_address;  // host:port other nodes dial
  std::string http_address;     // host:port clients are sent to
  std::int64_t incarnation = 0;
  bool draining = false;
  std::string certificate;  // with cluster TLS (ADR 0032): DER, as its record carries it
  auto operator<=>(const member&) const = default;
};

enum class member_state { up, down };

class member_table {
 public:
  explicit member_table(member self);

  const member& self() const { return self_; }
  void set_self(member self);

  // The members etcd lists now. Exactly these are up (their records as
  // listed); every other member known is down; this node is a member when
  // it is listed. True when anything changed.
  bool set_agreed(const std::vector<member>& members);
  // This node's registration lapsed (its lease is gone or could not be
  // renewed in time): it is no member until set_agreed lists it again.
  // What it knew of the others stays as it was. True when it was a member.
  bool lapse();
  bool is_member() const { return is_member_; }
  // The member said itself that it drains (before the record may say so).
  // Within one life draining only goes from false to true: a list that
  // does not say so yet does not undo it. True when it changed.
  bool mark_draining(const std::string& id, std::int64_t incarnation);

  std::optional<member> find(const std::string& id) const;
  std::optional<member_state> state(const std::string& id) const;
  // Ids of the members that are up, this node included while it is one,
  // sorted: every member that may hold a stream's log.
  std::vector<std::string> live_ids() const;
  // The members keys are placed on: up and not draining, sorted.
  std::vector<std::string> placement_ids() const;
  // Ids of members that were up and are not (left by a drain: not lost).
  std::vector<std::string> lost_ids() const;
  // Every member known, this node first.
  std::vector<member> all() const;
  // The other members that are up.
  std::vector<member> others_up() const;

 private:
  struct entry {
    member m;
    member_state state = member_state::down;
  };
  member self_;
  bool is_member_ = false;
  std::map<std::string, entry> others_;
};

}  // namespace tidings::cluster
