#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "core/placement.hpp"

using tidings::core::owner_of;
using tidings::core::placement_score;

namespace {

std::vector<std::string> members(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("node" + std::to_string(i) + "-0123456789abcdef");
  return out;
}

}  // namespace

TEST_CASE("placement scores are fixed values, so every build agrees", "[placement]") {
  // Pinned: a change here would move every key of a running cluster whose
  // nodes run different builds.
  CHECK(placement_score("a", "t", "k") == placement_score("a", "t", "k"));
  CHECK(placement_score("a", "t", "k") != placement_score("b", "t", "k"));
  CHECK(placement_score("a", "t", "k") != placement_score("a", "u", "k"));
  // The separator keeps ("ab","c") and ("a","bc") apart.
  CHECK(placement_score("n", "ab", "c") != placement_score("n", "a", "bc"));
  CHECK(placement_score("node-a", "default", "orders") == 0xf10064b9256e44acULL);
}

TEST_CASE("the owner does not depend on the order members are listed in", "[placement]") {
  auto m = members(5);
  std::vector<std::string> reversed(m.rbegin(), m.rend());
  for (int k = 0; k < 200; ++k) {
    auto key = "stream-" + std::to_string(k);
    CHECK(owner_of(m, "t", key) == owner_of(reversed, "t", key));
  }
  CHECK(owner_of({}, "t", "k").empty());
}

TEST_CASE("keys spread over members roughly evenly", "[placement]") {
  auto m = members(3);
  std::map<std::string, int> counts;
  constexpr int keys = 30000;
  for (int k = 0; k < keys; ++k) ++counts[owner_of(m, "default", "s" + std::to_string(k))];
  REQUIRE(counts.size() == 3);
  for (auto& [node, n] : counts) {
    CHECK(n > keys / 3 * 9 / 10);
    CHECK(n < keys / 3 * 11 / 10);
  }
}

TEST_CASE("a member leaving moves only its own keys, to the others evenly", "[placement]") {
  auto all = members(4);
  std::vector<std::string> without(all.begin(), all.begin() + 3);  // all[3] left
  int moved = 0;
  std::map<std::string, int> heirs;
  constexpr int keys = 20000;
  for (int k = 0; k < keys; ++k) {
    auto key = "k" + std::to_string(k);
    auto before = owner_of(all, "t", key);
    auto after = owner_of(without, "t", key);
    if (before == all[3]) {
      ++moved;
      ++heirs[after];
    } else {
      CHECK(before == after);  // nobody else's keys move
    }
  }
  CHECK(moved > keys / 4 * 9 / 10);
  CHECK(moved < keys / 4 * 11 / 10);
  REQUIRE(heirs.size() == 3);
  for (auto& [node, n] : heirs) CHECK(n > moved / 3 * 8 / 10);
}

TEST_CASE("a member joining takes keys only from the others, and only its own", "[placement]") {
  auto before = members(3);
  auto after = members(4);
  int taken = 0;
  for (int k = 0; k < 10000; ++k) {
    auto key = "k" + std::to_string(k);
    auto a = owner_of(before, "t", key);
    auto b = owner_of(after, "t", key);
    if (a != b) {
      CHECK(b == after[3]);
      ++taken;
    }
  }
  CHECK(taken > 2000);
  CHECK(taken < 3000);
}

TEST_CASE("tenants are part of the key", "[placement]") {
  auto m = members(8);
  int differ = 0;
  for (int k = 0; k < 100; ++k) {
    auto key = "s" + std::to_string(k);
    differ += owner_of(m, "tenant-a", key) != owner_of(m, "tenant-b", key);
  }
  CHECK(differ > 50);
}

TEST_CASE("ranked lists every member once, the owner first", "[placement][replication]") {
  using tidings::core::ranked;
  auto m = members(5);
  for (int k = 0; k < 100; ++k) {
    auto key = "r" + std::to_string(k);
    auto order = ranked(m, "t", key);
    REQUIRE(order.size() == m.size());
    CHECK(order.front() == owner_of(m, "t", key));
    std::vector<std::string> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == m);
    // Each next member owns the key once those before it are gone.
    std::vector<std::string> rest = m;
    for (const auto& id : order) {
      CHECK(owner_of(rest, "t", key) == id);
      rest.erase(std::find(rest.begin(), rest.end(), id));
    }
  }
  CHECK(ranked({}, "t", "k").empty());
}

TEST_CASE("a lost owner's first follower is the key's next owner", "[placement][replication]") {
  using tidings::core::followers_of;
  auto m = members(4);
  for (int k = 0; k < 200; ++k) {
    auto key = "f" + std::to_string(k);
    auto owner = owner_of(m, "t", key);
    auto followers = followers_of(m, owner, "t", key, 2);
    REQUIRE(followers.size() == 2);
    CHECK(std::find(followers.begin(), followers.end(), owner) == followers.end());
    std::vector<std::string> survivors;
    for (const auto& id : m)
      if (id != owner) survivors.push_back(id);
    CHECK(owner_of(survivors, "t", key) == followers.front());
  }
  // Fewer members than asked for: everyone else.
  auto two = members(2);
  auto owner = owner_of(two, "t", "x");
  CHECK(followers_of(two, owner, "t", "x", 3).size() == 1);
  // An owner that is not the top-ranked (a pinned stream) is skipped, not counted.
  auto order = tidings::core::ranked(m, "t", "x");
  auto f = followers_of(m, order[2], "t", "x", 2);
  CHECK(f == std::vector<std::string>{order[0], order[1]});
}
