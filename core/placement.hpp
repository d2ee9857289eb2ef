#pragma once

// Who owns a key in a cluster: rendezvous (highest random weight) hashing of
// (tenant, key) over the live members' ids. Every node computes the same
// owner from the same member set, without talking to anyone, and a
// membership change moves only the keys whose top-scoring member joined or
// left (ADR 0015).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tidings::core {

// A stable 64-bit score: the same on every build and platform (std::hash is
// not), so nodes of different builds still agree.
std::uint64_t placement_score(std::string_view member, std::string_view tenant, std::string_view key);

// The member with the highest score (ties, which need a hash collision, go
// to the smaller id). Empty when there are no members.
std::string owner_of(std::span<const std::string> members, std::string_view tenant, std::string_view key);

// Every member, best score first (the same order owner_of picks by): the
// owner, then whoever would own the key were the ones before it gone.
std::vector<std::string> ranked(std::span<const std::string> members, std::string_view tenant,
                                std::string_view key);

// The members that keep copies of the log `owner` writes (replication,
// ADR 0017): the first `count` of ranked() other than `owner`. When the
// owner is the top-ranked member, the first follower is the member that
// owns the key once the owner is gone, so a failover lands on a copy.
std::vector<std::string> followers_of(std::span<const std::string> members, std::string_view owner,
                                      std::string_view tenant, std::string_view key, std::size_t count);

}  // namespace tidings::core
