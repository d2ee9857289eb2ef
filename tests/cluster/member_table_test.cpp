// The membership merge rules of cluster/member_table.hpp: what gossip may
// change (a new member, a newer life, draining from false to true) and what
// it may not (ourselves, older lives, a differing copy of the same life),
// and the id lists the node places keys on, dials and fails over from.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cluster/member_table.hpp"

namespace {

using namespace tidings::cluster;
using ids = std::vector<std::string>;

member make(const std::string& id, std::int64_t incarnation, const std::string& port = "1",
            bool draining = false) {
  return member{id, "127.0.0.1:7" + port, "127.0.0.1:8" + port, incarnation, draining};
}

ids ids_of(const std::vector<member>& members) {
  ids out;
  for (const auto& m : members) out.push_back(m.id);
  return out;
}

}  // namespace

TEST_CASE("a member heard of for the first time is learned, down until connected", "[member_table]") {
  member_table table(make("m", 10));
  const auto b = make("b", 5, "2");

  CHECK_FALSE(table.find("b"));
  CHECK_FALSE(table.state("b"));
  CHECK(table.learn(b));
  REQUIRE(table.find("b"));
  CHECK(*table.find("b") == b);
  CHECK(table.state("b") == member_state::down);
  CHECK(ids_of(table.all()) == ids{"m", "b"});  // ourselves first
  CHECK(ids_of(table.unconnected()) == ids{"b"});
  // Hearing the same record again is no news.
  CHECK_FALSE(table.learn(b));
}

TEST_CASE("records about ourselves, without an id, or of an older life are ignored", "[member_table]") {
  const auto self = make("m", 10);
  member_table table(self);

  SECTION("ourselves, even in a newer life or draining: we know best") {
    CHECK_FALSE(table.learn(make("m", 11, "9")));
    CHECK_FALSE(table.learn(make("m", 10, "1", true)));
    CHECK(table.self() == self);
    CHECK(*table.find("m") == self);
    CHECK(table.state("m") == member_state::up);
    CHECK(ids_of(table.all()) == ids{"m"});
    CHECK(table.unconnected().empty());
  }
  SECTION("a record without an id") {
    CHECK_FALSE(table.learn(make("", 3)));
    CHECK(ids_of(table.all()) == ids{"m"});
  }
  SECTION("an older life of a member we know") {
    const auto current = make("b", 5, "2");
    REQUIRE(table.learn(current));
    REQUIRE(table.mark_up("b", 5));
    CHECK_FALSE(table.learn(make("b", 4, "3")));
    CHECK_FALSE(table.learn(make("b", 4, "2", true)));
    CHECK(*table.find("b") == current);
    CHECK(table.state("b") == member_state::up);
    // Nor is a connection to that older life taken for the current one.
    CHECK_FALSE(table.mark_up("b", 4));
  }
}

TEST_CASE("a newer life replaces the old one and is down until connected in that life", "[member_table]") {
  member_table table(make("m", 10));
  REQUIRE(table.learn(make("b", 1, "2")));
  CHECK(table.mark_up("b", 1));
  CHECK(table.state("b") == member_state::up);
  CHECK_FALSE(table.mark_up("b", 1));  // already up

  const auto reborn = make("b", 2, "3");
  CHECK(table.learn(reborn));
  CHECK(*table.find("b") == reborn);  // the restarted node's new addresses win
  CHECK(table.state("b") == member_state::down);
  CHECK(ids_of(table.unconnected()) == ids{"b"});
  CHECK(table.live_ids() == ids{"m"});

  // A connection to the old life does not bring the new one up.
  CHECK_FALSE(table.mark_up("b", 1));
  CHECK(table.state("b") == member_state::down);
  CHECK(table.mark_up("b", 2));
  CHECK(table.state("b") == member_state::up);
  CHECK(table.live_ids() == ids{"b", "m"});

  // Nobody we never heard of comes up.
  CHECK_FALSE(table.mark_up("x", 1));
  CHECK_FALSE(table.find("x"));
}

TEST_CASE("within one life only draining changes, and only from false to true", "[member_table]") {
  member_table table(make("m", 10));
  const auto b = make("b", 5, "2");
  REQUIRE(table.learn(b));

  // Another gossiper's differing copy of the same life (other addresses) is
  // ignored: accepting it would let two copies flip each other forever.
  const auto other_copy = make("b", 5, "3");
  for (int round = 0; round < 3; ++round) {
    CHECK_FALSE(table.learn(other_copy));
    CHECK_FALSE(table.learn(b));
  }
  CHECK(*table.find("b") == b);

  auto draining = b;
  draining.draining = true;
  CHECK(table.learn(draining));
  CHECK(table.find("b")->draining);
  CHECK_FALSE(table.learn(draining));
  // A stale copy that has not heard of the drain does not undo it.
  CHECK_FALSE(table.learn(b));
  CHECK(table.find("b")->draining);
  // Draining changed the flag only, not the addresses.
  CHECK(table.find("b")->cluster_address == b.cluster_address);
}

TEST_CASE("live_ids are ourselves and the members that are up, sorted", "[member_table]") {
  member_table table(make("m", 10));
  CHECK(table.live_ids() == ids{"m"});
  REQUIRE(table.learn(make("z", 1, "2")));
  REQUIRE(table.learn(make("a", 1, "3")));
  REQUIRE(table.learn(make("q", 1, "4")));  // known, never connected
  REQUIRE(table.learn(make("d", 1, "5", true)));
  CHECK(table.live_ids() == ids{"m"});
  REQUIRE(table.mark_up("z", 1));
  REQUIRE(table.mark_up("a", 1));
  REQUIRE(table.mark_up("d", 1));
  // A draining member still holds its logs until it handed them over.
  CHECK(table.live_ids() == ids{"a", "d", "m", "z"});
  REQUIRE(table.mark_down("z"));
  CHECK(table.live_ids() == ids{"a", "d", "m"});
}

TEST_CASE("placement_ids leave out draining members, ourselves included", "[member_table]") {
  member_table table(make("m", 10));
  REQUIRE(table.learn(make("a", 1, "2")));
  REQUIRE(table.learn(make("z", 1, "3")));
  REQUIRE(table.learn(make("q", 1, "4")));  // never up: not placed on
  REQUIRE(table.mark_up("a", 1));
  REQUIRE(table.mark_up("z", 1));
  CHECK(table.placement_ids() == ids{"a", "m", "z"});

  REQUIRE(table.learn(make("z", 1, "3", true)));
  CHECK(table.placement_ids() == ids{"a", "m"});
  CHECK(table.live_ids() == ids{"a", "m", "z"});

  table.set_self(make("m", 10, "1", true));
  CHECK(table.placement_ids() == ids{"a"});
  CHECK(table.live_ids() == ids{"a", "m", "z"});
}

TEST_CASE("lost_ids are members that were up and went down, not those that drained", "[member_table]") {
  member_table table(make("m", 10));
  REQUIRE(table.learn(make("a", 1, "2")));
  REQUIRE(table.learn(make("b", 1, "3")));
  REQUIRE(table.learn(make("c", 1, "4")));  // never up
  REQUIRE(table.mark_up("a", 1));
  REQUIRE(table.mark_up("b", 1));
  CHECK(table.lost_ids().empty());

  CHECK(table.mark_down("a"));
  CHECK_FALSE(table.mark_down("a"));  // already down
  CHECK_FALSE(table.mark_down("c"));  // never up
  CHECK_FALSE(table.mark_down("x"));  // unknown
  CHECK(table.lost_ids() == ids{"a"});

  // A drained member left; it was not lost.
  REQUIRE(table.learn(make("b", 1, "3", true)));
  CHECK(table.mark_down("b"));
  CHECK(table.lost_ids() == ids{"a"});

  // Connected again: no longer lost.
  REQUIRE(table.mark_up("a", 1));
  CHECK(table.lost_ids().empty());
}

TEST_CASE("unconnected lists the members that are down: whom to dial", "[member_table]") {
  member_table table(make("m", 10));
  REQUIRE(table.learn(make("a", 1, "2")));
  REQUIRE(table.learn(make("b", 1, "3")));
  REQUIRE(table.learn(make("c", 1, "4")));
  CHECK(ids_of(table.unconnected()) == ids{"a", "b", "c"});

  REQUIRE(table.mark_up("a", 1));
  REQUIRE(table.mark_up("b", 1));
  CHECK(ids_of(table.unconnected()) == ids{"c"});

  REQUIRE(table.mark_down("b"));
  const auto down = table.unconnected();
  CHECK(ids_of(down) == ids{"b", "c"});
  // With the addresses to dial.
  CHECK(down.front() == *table.find("b"));
}
