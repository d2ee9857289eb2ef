#include "core/stream_leadership.hpp"

#include <catch2/catch.hpp>

namespace tidings::core {

TEST_CASE("stream_leadership: a new stream's replicas are all in sync, led at epoch 1", "[leadership]") {
  const auto r = first_record("b", {"c", "a"}, 42);
  CHECK(r.leader == "b");
  CHECK(r.leader_epoch == 1);
  CHECK(r.isr == std::vector<member_id>{"a", "b", "c"});
  CHECK(r.log_epoch == 42);
  CHECK(r.epochs == epoch_starts{{1, 1}});
}

TEST_CASE("stream_leadership: only the leader at its epoch shrinks or grows the ISR", "[leadership]") {
  const auto r = first_record("a", {"b", "c"}, 1);
  CHECK_FALSE(shrink_isr(r, "b", 1, "c").ok);
  CHECK_THAT(shrink_isr(r, "a", 0, "c").reason, Catch::Contains("epoch"));
  CHECK_FALSE(shrink_isr(r, "a", 1, "a").ok);
  const auto shrunk = shrink_isr(r, "a", 1, "c");
  REQUIRE(shrunk.ok);
  CHECK(shrunk.record.isr == std::vector<member_id>{"a", "b"});
  CHECK_FALSE(shrink_isr(shrunk.record, "a", 1, "c").ok);

  // Back in only with everything the leader holds.
  CHECK_THAT(expand_isr(shrunk.record, "a", 1, "c", 9, 10).reason, Catch::Contains("short of"));
  CHECK_FALSE(expand_isr(shrunk.record, "b", 1, "c", 10, 10).ok);
  CHECK_FALSE(expand_isr(shrunk.record, "a", 1, "b", 10, 10).ok);
  const auto grown = expand_isr(shrunk.record, "a", 1, "c", 10, 10);
  REQUIRE(grown.ok);
  CHECK(grown.record.isr == std::vector<member_id>{"a", "b", "c"});
}

TEST_CASE("stream_leadership: a new leader comes from the live ISR once the old one's lease is gone",
          "[leadership]") {
  auto r = first_record("a", {"b"}, 1);
  r = shrink_isr(r, "a", 1, "b").record;  // b fell behind
  CHECK_THAT(elect(r, "b", 5, {"b", "c"}).reason, Catch::Contains("not an in-sync replica"));
  r = first_record("a", {"b", "c"}, 1);
  CHECK_THAT(elect(r, "b", 5, {"a", "b", "c"}).reason, Catch::Contains("still holds its lease"));
  CHECK_THAT(elect(r, "b", 5, {"a", "c"}).reason, Catch::Contains("no live lease"));
  const auto e = elect(r, "b", 5, {"b", "c"});
  REQUIRE(e.ok);
  CHECK(e.record.leader == "b");
  CHECK(e.record.leader_epoch == 2);
  CHECK(e.record.isr == std::vector<member_id>{"b", "c"});
  CHECK(e.record.log_epoch == 1);  // the same log: cursors stay valid
  CHECK(e.record.epochs == epoch_starts{{1, 1}, {2, 6}});
  // The recorded leader coming back may take a new epoch itself.
  const auto back = elect(r, "a", 7, {"a"});
  REQUIRE(back.ok);
  CHECK(back.record.leader_epoch == 2);
}

TEST_CASE("stream_leadership: a forced election only when no ISR member lives, and it starts a new log",
          "[leadership]") {
  const auto r = first_record("a", {"b"}, 1);
  CHECK_THAT(force_elect(r, "c", 0, {"b", "c"}, 2).reason, Catch::Contains("elect it instead"));
  CHECK_FALSE(force_elect(r, "c", 0, {"c"}, 1).ok);
  const auto f = force_elect(r, "c", 3, {"c"}, 2);
  REQUIRE(f.ok);
  CHECK(f.record.leader == "c");
  CHECK(f.record.isr == std::vector<member_id>{"c"});
  CHECK(f.record.log_epoch == 2);
  CHECK(f.record.epochs == epoch_starts{{2, 4}});
}

TEST_CASE("stream_leadership: acknowledge only with every ISR member durable and min-insync met",
          "[leadership]") {
  const auto r = first_record("a", {"b", "c"}, 1);
  std::map<member_id, std::uint64_t> ends = {{"a", 5}, {"b", 5}, {"c", 4}};
  CHECK_FALSE(may_acknowledge(r, "a", 1, 5, ends, 2));
  CHECK(may_acknowledge(r, "a", 1, 4, ends, 2));
  CHECK_FALSE(may_acknowledge(r, "b", 1, 4, ends, 2));  // not the leader
  CHECK_FALSE(may_acknowledge(r, "a", 2, 4, ends, 2));  // not its epoch
  const auto alone = shrink_isr(shrink_isr(r, "a", 1, "b").record, "a", 1, "c").record;
  CHECK_FALSE(may_acknowledge(alone, "a", 1, 5, ends, 2));
  CHECK(may_acknowledge(alone, "a", 1, 5, ends, 1));
  CHECK_FALSE(may_acknowledge(r, "a", 1, 1, {{"a", 5}, {"b", 5}}, 1));  // nothing heard from c
}

TEST_CASE("stream_leadership: logs agree up to the first seq whose leader epochs differ", "[leadership]") {
  // Leader: epoch 1 wrote 1-3, epoch 3 from 4. The follower took 1-4 from
  // a leader of epoch 2 that never acknowledged 4.
  const epoch_starts leader = {{1, 1}, {3, 4}};
  const epoch_starts follower = {{1, 1}, {2, 4}};
  CHECK(common_prefix(follower, 4, leader, 6) == 3);
  CHECK(common_prefix(leader, 6, follower, 4) == 3);
  CHECK(common_prefix(leader, 6, leader, 6) == 6);
  CHECK(common_prefix(leader, 6, {{1, 1}}, 2) == 2);  // a shorter log of the same epoch
  CHECK(common_prefix({{1, 1}}, 0, leader, 6) == 0);
  CHECK(epoch_of(leader, 3) == 1);
  CHECK(epoch_of(leader, 4) == 3);
  CHECK(epoch_of(leader, 0) == 0);

  CHECK(truncate_epochs(follower, 3) == epoch_starts{{1, 1}});
  CHECK(truncate_epochs(follower, 4) == follower);
  auto e = truncate_epochs(follower, 3);
  CHECK(note_append(e, 3, 4));
  CHECK(note_append(e, 3, 5));
  CHECK(e == leader);
  CHECK_FALSE(note_append(e, 2, 6));  // an older epoch after a newer one is refused
  CHECK(e == leader);
}

TEST_CASE("stream_leadership: a handoff makes the member that took the whole log leader at a new epoch",
          "[leadership]") {
  const auto r = first_record("a", {"b"}, 1);
  // From the live leader (it quiesced while the log was pulled).
  const auto h = succeed(r, "c", 9, "a", {"a", "b", "c"});
  REQUIRE(h.ok);
  CHECK(h.record.leader == "c");
  CHECK(h.record.leader_epoch == 2);
  CHECK(h.record.isr == std::vector<member_id>{"a", "b", "c"});
  CHECK(h.record.epochs == epoch_starts{{1, 1}, {2, 10}});
  // From an ISR member only once the leader is gone.
  CHECK_THAT(succeed(r, "c", 9, "b", {"a", "b", "c"}).reason, Catch::Contains("neither the leader"));
  const auto g = succeed(r, "c", 9, "b", {"b", "c"});
  REQUIRE(g.ok);
  CHECK(g.record.isr == std::vector<member_id>{"b", "c"});
  // Never from a member outside the ISR, nor from itself.
  const auto shrunk = shrink_isr(r, "a", 1, "b").record;
  CHECK_FALSE(succeed(shrunk, "c", 9, "b", {"b", "c"}).ok);
  CHECK_FALSE(succeed(r, "a", 9, "a", {"a"}).ok);
}

TEST_CASE("stream_leadership: a new owner leads, elects itself, pulls or holds as the record says",
          "[leadership]") {
  using kind = claim_plan::kind;
  // No record: the first owner creates it, alone in its ISR.
  auto p = plan_claim(std::nullopt, "a", false, 0, {"a", "b"});
  CHECK(p.what == kind::create);
  REQUIRE(p.change.ok);
  CHECK(p.change.record.isr == std::vector<member_id>{"a"});
  const auto r = first_record("a", {"b", "c"}, 1);
  CHECK(plan_claim(r, "a", true, 5, {"a", "b"}).what == kind::lead);
  // A live leader hands its log over.
  p = plan_claim(r, "b", true, 5, {"a", "b"});
  CHECK(p.what == kind::pull);
  CHECK(p.from == "a");
  // The leader gone: an ISR member with its copy is elected.
  p = plan_claim(r, "b", true, 5, {"b", "c"});
  CHECK(p.what == kind::elect);
  CHECK(p.change.record.leader == "b");
  // Without a copy it pulls from a live ISR member.
  p = plan_claim(r, "b", false, 0, {"b", "c"});
  CHECK(p.what == kind::pull);
  CHECK(p.from == "c");
  // Outside the ISR (it fell behind and the leader shrank it away) with no
  // ISR member alive: it holds, whatever its own copy says.
  const auto alone = shrink_isr(shrink_isr(r, "a", 1, "b").record, "a", 1, "c").record;
  p = plan_claim(alone, "b", true, 50, {"b", "c"});
  CHECK(p.what == kind::hold);
  CHECK_THAT(p.reason, Catch::Contains("in sync: a"));
}

TEST_CASE(
    "stream_leadership: the recorded leader leads only on a copy that holds the log it was elected with",
    "[leadership]") {
  using kind = claim_plan::kind;
  // A new stream: no copy anywhere yet, and none needed.
  CHECK(plan_claim(first_record("a", {}, 0), "a", false, 0, {"a"}).what == kind::lead);
  // Elected (or handed the log) at seq 30: its copy must reach 30.
  const auto r = succeed(first_record("b", {"c"}, 1), "a", 30, "b", {"a", "b", "c"}).record;
  CHECK(plan_claim(r, "a", true, 30, {"a", "b", "c"}).what == kind::lead);
  // Killed before it stored the pulled log: it pulls again from an ISR member.
  auto p = plan_claim(r, "a", false, 0, {"a", "c"});
  CHECK(p.what == kind::pull);
  CHECK(p.from == "c");
  p = plan_claim(r, "a", true, 12, {"a", "b"});
  CHECK(p.what == kind::pull);
  CHECK(p.from == "b");
  // and takes its own record back from that member.
  CHECK(succeed(r, "a", 30, "c", {"a", "c"}).ok);
  // With no other ISR member alive it holds, and says why.
  p = plan_claim(r, "a", true, 12, {"a"});
  CHECK(p.what == kind::hold);
  CHECK_THAT(p.reason, Catch::Contains("ends before seq 30"));
}

TEST_CASE("stream_leadership: the leader shrinks its ISR to what it waits for before it grows it",
          "[leadership]") {
  const auto r = first_record("a", {"b"}, 1);
  // b fell out of sync: shrink first.
  auto s = next_isr_step(r, "a", {"c"}, {{"c", 10}}, 5);
  CHECK(s.what == isr_step::kind::shrink);
  CHECK(s.member == "b");
  const auto shrunk = shrink_isr(r, "a", 1, "b").record;
  // c comes in only once it holds what it must.
  CHECK(next_isr_step(shrunk, "a", {"c"}, {{"c", 4}}, 5).what == isr_step::kind::none);
  s = next_isr_step(shrunk, "a", {"c"}, {{"c", 5}}, 5);
  CHECK(s.what == isr_step::kind::expand);
  CHECK(s.member == "c");
  CHECK(next_isr_step(r, "a", {"b"}, {{"b", 9}}, 5).what == isr_step::kind::none);
}

TEST_CASE("stream_leadership: the leader acknowledges up to what every ISR member holds", "[leadership]") {
  const auto r = first_record("a", {"b"}, 1);
  CHECK(acknowledgeable(r, "a", 1, {{"a", 9}, {"b", 7}}, 2) == 7);
  CHECK(acknowledgeable(r, "a", 1, {{"a", 9}}, 2) == 0);
  CHECK(acknowledgeable(r, "a", 2, {{"a", 9}, {"b", 7}}, 2) == 0);
  CHECK(acknowledgeable(r, "b", 1, {{"a", 9}, {"b", 7}}, 2) == 0);
  const auto alone = shrink_isr(r, "a", 1, "b").record;
  CHECK(acknowledgeable(alone, "a", 1, {{"a", 9}}, 2) == 0);
  CHECK(acknowledgeable(alone, "a", 1, {{"a", 9}}, 1) == 9);
}

}  // namespace tidings::core
