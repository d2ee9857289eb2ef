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

namespace tidings::core {

// A stable 64-bit score: the same on every build and platform (std::hash is
// not), so nodes of different builds still agree.
std::uint64_t placement_score(std::string_view member, std::string_view tenant, std::string_view key);

// The member with the highest score (ties, which need a hash collision, go
// to the smaller id). Empty when there are no members.
std::string owner_of(std::span<const std::string> members, std::string_view tenant, std::string_view key);

}  // namespace tidings::core
