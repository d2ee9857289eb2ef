#include <catch2/catch.hpp>

#include "core/replica_quorum.hpp"

using tidings::core::replica_quorum;

TEST_CASE("with no in-sync follower a batch is acknowledged at once", "[replication]") {
  replica_quorum q(10, std::nullopt);
  q.add("b");  // catching up: not required yet
  q.shipped(12);
  CHECK(q.acknowledged() == 12);
  CHECK(q.can_acknowledge());
}

TEST_CASE("an in-sync follower holds every batch back until it confirms it, in order", "[replication]") {
  replica_quorum q(0, std::nullopt);
  q.add("b");
  q.set_in_sync("b", true);
  q.shipped(3);
  q.shipped(5);
  CHECK(q.acknowledged() == 0);
  q.confirm("b", 3);
  CHECK(q.acknowledged() == 3);
  q.confirm("b", 2);  // an older answer changes nothing
  CHECK(q.acknowledged() == 3);
  q.confirm("b", 5);
  CHECK(q.acknowledged() == 5);
}

TEST_CASE("every follower in sync when a batch shipped must confirm it", "[replication]") {
  replica_quorum q(0, std::nullopt);
  q.add("b");
  q.add("c");
  q.set_in_sync("b", true);
  q.shipped(1);  // needs b only: c was catching up
  q.set_in_sync("c", true);
  q.shipped(2);  // needs b and c
  q.confirm("b", 2);
  CHECK(q.acknowledged() == 1);
  q.confirm("c", 2);
  CHECK(q.acknowledged() == 2);
}

TEST_CASE("a slow follower is waited for, a lost one or one that fell behind is not", "[replication]") {
  replica_quorum q(0, std::nullopt);
  q.add("b");
  q.add("c");
  q.set_in_sync("b", true);
  q.set_in_sync("c", true);
  q.shipped(4);
  q.confirm("b", 4);
  CHECK(q.acknowledged() == 0);  // c is slow: still required
  SECTION("lost") {
    q.remove("c");
    CHECK(q.acknowledged() == 4);
  }
  SECTION("behind, by its own word") {
    q.set_in_sync("c", false);
    CHECK(q.acknowledged() == 4);
    q.shipped(6);  // c is no longer required for new batches either
    q.confirm("b", 6);
    CHECK(q.acknowledged() == 6);
  }
}

TEST_CASE("a numeric write quorum counts any followers that hold the batch", "[replication]") {
  replica_quorum q(0, std::size_t{1});
  q.add("b");
  q.add("c");
  CHECK_FALSE(q.can_acknowledge());  // nobody in sync yet
  q.set_in_sync("c", true);
  CHECK(q.can_acknowledge());
  q.shipped(7);
  CHECK(q.acknowledged() == 0);
  q.confirm("b", 7);  // catching up, but it holds 7: counts
  CHECK(q.acknowledged() == 7);
  q.shipped(8);
  q.remove("b");
  q.remove("c");
  CHECK(q.acknowledged() == 7);  // nobody left to hold 8: it waits
  CHECK_FALSE(q.can_acknowledge());
}

TEST_CASE("a follower's state is reported", "[replication]") {
  replica_quorum q(0, std::nullopt);
  q.add("b");
  CHECK(q.has("b"));
  CHECK_FALSE(q.in_sync("b"));
  q.confirm("b", 9);
  CHECK(q.confirmed("b") == 9);
  q.set_in_sync("b", true);
  CHECK(q.in_sync_count() == 1);
  CHECK(q.followers() == std::vector<std::string>{"b"});
  q.remove("b");
  CHECK_FALSE(q.has("b"));
  CHECK(q.confirmed("b") == 0);
}
