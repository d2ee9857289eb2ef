// The membership rules of cluster/member_table.hpp (ADR 0022): exactly the
// members the agreed record lists are up, whatever a connection says; this
// node is a member only while it is listed and its registration holds; and
// the id lists the node places keys on and fails over from.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cluster/member_table.hpp"

namespace {

using namespace tidings::cluster;
using ids = std::vector<std::string>;

member make(const std::string& id, std::int64_t incarnation = 1, bool draining = false) {
  return member{id, "127.0.0.1:71" + id, "127.0.0.1:81" + id, incarnation, draining, ""};
}

ids ids_of(const std::vector<member>& members) {
  ids out;
  for (const auto& m : members) out.push_back(m.id);
  return out;
}

}  // namespace

TEST_CASE("before the record lists it, a node is no member and places nothing on itself", "[member_table]") {
  member_table table(make("m"));
  CHECK_FALSE(table.is_member());
  CHECK(table.state("m") == member_state::down);
  CHECK(table.live_ids().empty());
  CHECK(table.placement_ids().empty());
  CHECK(ids_of(table.all()) == ids{"m"});
}

TEST_CASE("exactly the members the record lists are up", "[member_table]") {
  member_table table(make("m"));
  CHECK(table.set_agreed({make("m"), make("b"), make("c")}));
  CHECK(table.is_member());
  CHECK(table.live_ids() == ids{"b", "c", "m"});
  CHECK(table.placement_ids() == ids{"b", "c", "m"});
  CHECK(ids_of(table.others_up()) == ids{"b", "c"});
  // The same list again is no news.
  CHECK_FALSE(table.set_agreed({make("c"), make("b"), make("m")}));

  SECTION("one the record drops is down, and lost") {
    CHECK(table.set_agreed({make("m"), make("c")}));
    CHECK(table.state("b") == member_state::down);
    CHECK(table.live_ids() == ids{"c", "m"});
    CHECK(table.lost_ids() == ids{"b"});
    REQUIRE(table.find("b"));  // still known, for the admin view
    SECTION("and up again when listed again") {
      CHECK(table.set_agreed({make("m"), make("c"), make("b")}));
      CHECK(table.state("b") == member_state::up);
      CHECK(table.lost_ids().empty());
    }
  }
  SECTION("a record that changes (a new life, draining) replaces the old one") {
    CHECK(table.set_agreed({make("m"), make("b", 2), make("c", 1, true)}));
    CHECK(table.find("b")->incarnation == 2);
    CHECK(table.find("c")->draining);
    CHECK(table.live_ids() == ids{"b", "c", "m"});
    CHECK(table.placement_ids() == ids{"b", "m"});  // draining: holds its logs, takes no new keys
    SECTION("a member that drained and left is not lost") {
      CHECK(table.set_agreed({make("m"), make("b", 2)}));
      CHECK(table.lost_ids().empty());
    }
  }
  SECTION("records without an id are ignored") {
    CHECK_FALSE(table.set_agreed({make("m"), make("b"), make("c"), make("")}));
  }
}

TEST_CASE("this node's own record in the list does not override what it knows of itself", "[member_table]") {
  member_table table(make("m"));
  auto me = make("m");
  me.draining = true;
  table.set_self(me);
  CHECK(table.set_agreed({make("m"), make("b")}));  // the record still says not draining
  CHECK(table.self().draining);
  CHECK(table.placement_ids() == ids{"b"});
  CHECK(table.live_ids() == ids{"b", "m"});
}

TEST_CASE("a lapsed node is no member until listed again, and what it knew of the others stays",
          "[member_table]") {
  member_table table(make("m"));
  REQUIRE(table.set_agreed({make("m"), make("b")}));
  CHECK(table.lapse());
  CHECK_FALSE(table.lapse());  // once
  CHECK_FALSE(table.is_member());
  CHECK(table.state("m") == member_state::down);
  CHECK(table.live_ids() == ids{"b"});
  CHECK(table.placement_ids() == ids{"b"});
  SECTION("a list without it keeps it out") {
    CHECK_FALSE(table.set_agreed({make("b")}));
    CHECK_FALSE(table.is_member());
  }
  SECTION("a list with it makes it a member again") {
    CHECK(table.set_agreed({make("m", 2), make("b")}));
    CHECK(table.is_member());
    CHECK(table.live_ids() == ids{"b", "m"});
  }
}

TEST_CASE("a member that says it drains is draining, and a list that lags does not undo it",
          "[member_table]") {
  member_table table(make("m"));
  REQUIRE(table.set_agreed({make("m"), make("b", 3)}));
  CHECK_FALSE(table.mark_draining("b", 2));  // another life
  CHECK_FALSE(table.mark_draining("x", 1));  // unknown
  CHECK(table.mark_draining("b", 3));
  CHECK_FALSE(table.mark_draining("b", 3));
  CHECK(table.placement_ids() == ids{"m"});
  CHECK_FALSE(table.set_agreed({make("m"), make("b", 3)}));  // the record has not caught up yet
  CHECK(table.find("b")->draining);
  SECTION("a new life starts undrained") {
    CHECK(table.set_agreed({make("m"), make("b", 4)}));
    CHECK_FALSE(table.find("b")->draining);
  }
}
