// The fault suite's checker and schedule (history_check.hpp,
// fault_plan.hpp) on made-up histories: each kind of violation is found,
// and a clean history is clean. Rounds can only be trusted as far as this.

#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/faults/fault_plan.hpp"
#include "tests/faults/history_check.hpp"

namespace {

using namespace tidings::testing;

const std::string epoch = "00000000000000aa";

data_event ev(std::uint64_t seq, int i) {
  data_event e;
  e.cursor = epoch + ":" + std::to_string(seq);
  e.data = {{"i", i}};
  return e;
}

std::vector<std::pair<int, std::string>> acked_1_to(int n) {
  std::vector<std::pair<int, std::string>> out;
  for (int i = 1; i <= n; ++i) out.emplace_back(i, epoch + ":" + std::to_string(i));
  return out;
}

std::vector<data_event> events_1_to(int n) {
  std::vector<data_event> out;
  for (int i = 1; i <= n; ++i) out.push_back(ev(static_cast<std::uint64_t>(i), i));
  return out;
}

}  // namespace

TEST_CASE("a history read back whole by every session is clean", "[faults][history]") {
  auto r = check_history(acked_1_to(5), {{"a", events_1_to(5), {}}, {"b", events_1_to(5), {}}});
  CHECK(r.clean());
  CHECK(r.acknowledged == 5);
}

TEST_CASE("the checker finds each kind of violation", "[faults][history]") {
  SECTION("an acknowledged event one session never read") {
    auto got = events_1_to(5);
    got.erase(got.begin() + 2);
    auto r = check_history(acked_1_to(5), {{"a", events_1_to(5), {}}, {"b", got, {}}});
    CHECK(r.lost == 1);
    CHECK(r.out_of_order == 1);
    CHECK_FALSE(r.clean());
  }
  SECTION("a cursor acknowledged for two events") {
    auto acked = acked_1_to(3);
    acked.emplace_back(4, epoch + ":3");
    auto r = check_history(acked, {});
    CHECK(r.reassigned == 1);
  }
  SECTION("one event acknowledged at two cursors") {
    auto acked = acked_1_to(3);
    acked.emplace_back(2, epoch + ":7");
    CHECK(check_history(acked, {}).reassigned == 1);
  }
  SECTION("a cursor read with another event's payload") {
    auto got = events_1_to(3);
    got[1] = ev(2, 9);
    CHECK(check_history(acked_1_to(3), {{"a", got, {}}}).reassigned == 1);
  }
  SECTION("an event read twice") {
    auto got = events_1_to(3);
    got.push_back(ev(3, 3));
    auto r = check_history(acked_1_to(3), {{"a", got, {}}});
    CHECK(r.duplicated == 1);
  }
  SECTION("an event read that was never acknowledged") {
    auto got = events_1_to(4);
    CHECK(check_history(acked_1_to(3), {{"a", got, {}}}).unacknowledged == 1);
  }
  SECTION("a resync told to a session") {
    auto r = check_history(acked_1_to(3), {{"a", events_1_to(3), {"resync {\"reason\":\"owner_changed\"}"}}});
    CHECK(r.resyncs == 1);
    CHECK_FALSE(r.clean());
  }
}

TEST_CASE("a watch's notice stream is clean when every read-back holds the same notices, and not otherwise",
          "[faults][history]") {
  // Notices carry no publisher's index: their payload is what must agree.
  CHECK(check_notices({{"a", events_1_to(4), {}}, {"b", events_1_to(4), {}}}).clean());
  CHECK(check_notices({{"a", events_1_to(4), {}}}).acknowledged == 4);

  SECTION("a notice one read-back lacks") {
    auto shorter = events_1_to(3);
    auto r = check_notices({{"a", events_1_to(4), {}}, {"late", shorter, {}}});
    CHECK(r.lost == 1);
    CHECK_FALSE(r.clean());
  }
  SECTION("a cursor read with two payloads") {
    auto other = events_1_to(4);
    other[2] = ev(3, 30);
    CHECK(check_notices({{"a", events_1_to(4), {}}, {"b", other, {}}}).reassigned == 1);
  }
  SECTION("a gap, a notice twice, a resync") {
    auto got = events_1_to(4);
    got.erase(got.begin() + 1);
    got.push_back(ev(4, 4));
    auto r = check_notices({{"a", got, {"resync {}"}}});
    CHECK(r.out_of_order == 2);  // 1 then 3, and 4 after 4
    CHECK(r.duplicated == 1);
    CHECK(r.resyncs == 1);
  }
}

TEST_CASE("a round's schedule is the same for the same seed, and within its scenario's bounds",
          "[faults][plan]") {
  for (const auto& s : fault_scenarios()) {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
      auto a = plan_round(s, seed);
      auto b = plan_round(s, seed);
      CHECK(describe(a) == describe(b));
      CHECK(std::find(s.kinds.begin(), s.kinds.end(), a.kind) != s.kinds.end());
      CHECK(a.peer != a.target);
      CHECK(a.hold >= s.min_hold);
      CHECK(a.hold <= s.max_hold);
      CHECK(a.etcd_member >= 0);
      CHECK(a.etcd_member <= 2);
    }
  }
  CHECK(describe(plan_round(fault_scenarios()[0], 1)) != describe(plan_round(fault_scenarios()[0], 2)));
}
