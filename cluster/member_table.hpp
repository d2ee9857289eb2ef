#pragma once

// The cluster's members as one node knows them, merged from gossip. Pure
// logic (no actors, no clock) so the merge rules are unit-tested.
//
// A member is identified by its node id (kept in its store, so a restart on
// the same data is the same member). Its incarnation is its start time: a
// record with a higher incarnation replaces an older one, so a restarted
// node's new address wins over what others still gossip about its last life.

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
  auto operator<=>(const member&) const = default;
};

enum class member_state { up, down };

class member_table {
 public:
  explicit member_table(member self);

  const member& self() const { return self_; }
  void set_self(member self);

  // What gossip or a join told us. Returns true when the table changed: a
  // new member, a newer life of one, or one that started draining. A record
  // for ourselves is ignored (we know best), as is one older than what we
  // hold; within one life only `draining` changes, from false to true.
  bool learn(const member& m);
  // We hold a live connection to `id` (incarnation `incarnation`): up.
  bool mark_up(const std::string& id, std::int64_t incarnation);
  // The connection to `id` was lost. True if it was up.
  bool mark_down(const std::string& id);

  std::optional<member> find(const std::string& id) const;
  std::optional<member_state> state(const std::string& id) const;
  // Ids of members that are up, ourselves included, sorted: every member
  // that may hold a stream's log.
  std::vector<std::string> live_ids() const;
  // The members keys are placed on: up and not draining, sorted.
  std::vector<std::string> placement_ids() const;
  // Ids of members we saw and then lost.
  std::vector<std::string> lost_ids() const;
  // Every member, ourselves first: what we gossip.
  std::vector<member> all() const;
  // Known but not connected: whom to dial.
  std::vector<member> unconnected() const;

 private:
  struct entry {
    member m;
    member_state state = member_state::down;
    bool ever_up = false;
  };
  member self_;
  std::map<std::string, entry> others_;
};

}  // namespace tidings::cluster
