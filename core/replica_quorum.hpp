#pragma once

// The owner's count of its followers' confirmations (replication, ADR 0017):
// which followers are in sync, how far each has made the log durable, and
// so how far the log is acknowledged. Pure logic; the log shipper actor
// (cluster/) feeds it and the tests drive it directly.
//
// With the default write quorum ("all"), a batch needs every follower that
// was in sync when it was shipped and still is: a follower leaves that set
// only by going away (membership) or by saying itself that it fell behind,
// never by being slow, so a follower that believes it is in sync always
// holds every acknowledged event. With a number k, a batch needs any k
// followers to hold it.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tidings::core {

class replica_quorum {
 public:
  // `acknowledged`: the head when counting starts (what the log had before).
  // `required`: nullopt for "all in-sync followers", else that many.
  replica_quorum(std::uint64_t acknowledged, std::optional<std::size_t> required);

  // A new follower: not in sync, nothing confirmed.
  void add(const std::string& follower);
  // Gone (lost, or no longer a follower and told so): no batch waits for it.
  void remove(const std::string& follower);
  // In sync: it gets every later batch as it is shipped, so those need it.
  // Not in sync: it said it is behind; nothing waits for it any more.
  void set_in_sync(const std::string& follower, bool in_sync);
  // The follower holds the log durably up to `head`.
  void confirm(const std::string& follower, std::uint64_t head);
  // A batch ending at `last_seq` went out to the in-sync followers.
  void shipped(std::uint64_t last_seq);

  // Every batch up to here has its confirmations.
  std::uint64_t acknowledged() const { return acknowledged_; }
  // With the followers as they are, a new batch can get its quorum.
  bool can_acknowledge() const;
  bool has(const std::string& follower) const { return followers_.contains(follower); }
  bool in_sync(const std::string& follower) const;
  std::uint64_t confirmed(const std::string& follower) const;
  std::size_t in_sync_count() const;
  std::vector<std::string> followers() const;

 private:
  struct follower_state {
    bool in_sync = false;
    std::uint64_t confirmed = 0;
  };
  struct batch {
    std::uint64_t last_seq = 0;
    std::vector<std::string> required;  // "all": in sync when shipped
  };
  bool satisfied(const batch& b) const;
  void advance();

  std::uint64_t acknowledged_;
  std::optional<std::size_t> required_;
  std::map<std::string, follower_state> followers_;
  std::deque<batch> batches_;
};

}  // namespace tidings::core
