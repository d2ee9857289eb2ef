#include "core/placement.hpp"

#include <algorithm>
#include <utility>

namespace tidings::core {
namespace {

// FNV-1a over the three parts with a separator byte that cannot occur in
// node ids or tenant ids, then a murmur3 finalizer: FNV alone mixes its last
// bytes poorly, which would let similar keys prefer the same member.
std::uint64_t fnv1a(std::uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::uint64_t placement_score(std::string_view member, std::string_view tenant, std::string_view key) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv1a(h, member);
  h = fnv1a(h, std::string_view("\0", 1));
  h = fnv1a(h, tenant);
  h = fnv1a(h, std::string_view("\0", 1));
  h = fnv1a(h, key);
  return mix(h);
}

std::string owner_of(std::span<const std::string> members, std::string_view tenant, std::string_view key) {
  const std::string* best = nullptr;
  std::uint64_t best_score = 0;
  for (const auto& m : members) {
    auto s = placement_score(m, tenant, key);
    if (!best || s > best_score || (s == best_score && m < *best)) {
      best = &m;
      best_score = s;
    }
  }
  return best ? *best : std::string{};
}

std::vector<std::string> ranked(std::span<const std::string> members, std::string_view tenant,
                                std::string_view key) {
  std::vector<std::pair<std::uint64_t, const std::string*>> scored;
  scored.reserve(members.size());
  for (const auto& m : members) scored.emplace_back(placement_score(m, tenant, key), &m);
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  std::vector<std::string> out;
  out.reserve(scored.size());
  for (const auto& [score, m] : scored) out.push_back(*m);
  return out;
}

std::vector<std::string> followers_of(std::span<const std::string> members, std::string_view owner,
                                      std::string_view tenant, std::string_view key, std::size_t count) {
  std::vector<std::string> out;
  for (auto& m : ranked(members, tenant, key)) {
    if (out.size() >= count) break;
    if (m != owner) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tidings::core
