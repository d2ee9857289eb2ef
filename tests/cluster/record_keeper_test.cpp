// The record keeper (ADR 0021) on CAF's test coordinator, over an
// in-memory store with etcd's compare-and-swap semantics whose answers the
// test releases one at a time, so each race is played in a chosen order.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cluster/record_keeper.hpp"
#include "proto/cluster.pb.h"

namespace {

using namespace tidings;
using namespace tidings::cluster;
using kind = record_request::kind;

// Keys with revisions, as etcd keeps them. Each call's answer waits in
// `pending` until the test releases it (answer_next), as a real store's
// answers come later.
struct memory_plane final : control_plane {
  std::map<std::string, plane_record> keys;
  std::int64_t revision = 1;
  std::deque<std::function<void()>> pending;
  bool fail_next_swap_after_writing = false;

  void get(std::string key, std::function<void(std::string, plane_record)> done) override {
    pending.push_back([this, key, done] { done("", keys.contains(key) ? keys[key] : plane_record{}); });
  }
  void swap(std::string key, std::int64_t expected, std::string value,
            std::function<void(std::string, bool, plane_record)> done) override {
    pending.push_back([this, key, expected, value, done] {
      auto now = keys.contains(key) ? keys[key] : plane_record{};
      if (now.mod_revision != expected) return done("", false, now);
      keys[key] = {true, value, ++revision};
      if (fail_next_swap_after_writing) {
        fail_next_swap_after_writing = false;
        return done("connection reset", false, {});  // written, but the answer is lost
      }
      done("", true, keys[key]);
    });
  }
  // A change by someone else, straight into the store.
  void write(const std::string& key, const core::stream_record& r) {
    proto::StreamRecord p;
    p.set_leader(r.leader);
    p.set_leader_epoch(r.leader_epoch);
    for (const auto& m : r.isr) p.add_isr(m);
    for (const auto& e : r.epochs) {
      auto* s = p.add_epochs();
      s->set_leader_epoch(e.leader_epoch);
      s->set_start(e.start);
    }
    keys[key] = {true, p.SerializeAsString(), ++revision};
  }
  void grant(std::int64_t, std::function<void(std::string, std::int64_t, std::int64_t)>) override {}
  void keep_alive(std::int64_t, std::function<void(std::string, std::int64_t)>) override {}
  void revoke(std::int64_t, std::function<void(std::string)>) override {}
  void put(std::string, std::string, std::int64_t, std::function<void(std::string)>) override {}
  void list(std::string, std::function<void(std::string, std::vector<plane_kv>, std::int64_t)>) override {}
  void watch(std::string, std::int64_t, std::function<void(std::vector<plane_change>, std::int64_t)>,
             std::function<void(std::string)>) override {}
  void stop() override {}
};

// Asks the keeper once and keeps the answer. A function with arguments, not
// a capturing lambda: CAF 0.17 binds a null reference to a lambda actor
// spawned without any (UBSan says so).
void asker(caf::event_based_actor* self, const record_keeper_actor& keeper, const record_request_ptr& ask,
           const std::shared_ptr<record_answer_ptr>& slot) {
  self->request(keeper, caf::infinite, record_atom::value, ask).then([slot](const record_answer_ptr& a) {
    *slot = a;
  });
}

struct fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  std::shared_ptr<memory_plane> plane = std::make_shared<memory_plane>();
  record_keeper_actor keeper;
  const actors::stream_key stream{"acme", "docs/a"};

  fixture() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    keeper = sys->spawn(record_keeper, record_keeper_config{plane, "/t/", std::chrono::milliseconds(3000)});
    sched->run();
  }
  ~fixture() {
    caf::anon_send_exit(keeper, caf::exit_reason::user_shutdown);
    sched->run();
  }

  // Sends an ask; its answer lands in the returned slot once the plane's
  // answers are released.
  std::shared_ptr<record_answer_ptr> ask(record_request r) {
    r.stream = stream;
    auto slot = std::make_shared<record_answer_ptr>();
    sys->spawn(asker, keeper, std::make_shared<const record_request>(std::move(r)), slot);
    sched->run();
    return slot;
  }
  // Releases the plane's answers until none is left.
  void settle() {
    while (!plane->pending.empty()) {
      auto next = std::move(plane->pending.front());
      plane->pending.pop_front();
      next();
      sched->run();
    }
  }
  std::string key() const { return record_key("/t/", stream); }
};

record_request claim(const std::string& me, bool has_copy, std::uint64_t end, std::vector<std::string> live) {
  record_request r;
  r.what = kind::claim;
  r.me = me;
  r.has_copy = has_copy;
  r.my_end = end;
  r.live = std::move(live);
  return r;
}

record_request isr_change(kind what, const std::string& me, std::uint64_t epoch, const std::string& member,
                          std::uint64_t member_end = 0, std::uint64_t must_hold = 0) {
  record_request r;
  r.what = what;
  r.me = me;
  r.at_epoch = epoch;
  r.member = member;
  r.member_end = member_end;
  r.must_hold = must_hold;
  return r;
}

}  // namespace

TEST_CASE("record keeper: the first owner creates the record, the next one pulls from it",
          "[cluster][records]") {
  fixture f;
  CHECK(f.key() == "/t/streams/acme/docs%2Fa");
  auto a = f.ask(claim("a", false, 0, {"a", "b"}));
  f.settle();
  REQUIRE(*a);
  CHECK((*a)->ok);
  CHECK((*a)->plan == core::claim_plan::kind::lead);
  REQUIRE((*a)->record);
  CHECK((*a)->record->leader == "a");
  CHECK((*a)->record->isr == std::vector<std::string>{"a"});
  // Leading it again (a new hub, a restart) is a new leader epoch.
  auto again = f.ask(claim("a", false, 0, {"a", "b"}));
  f.settle();
  REQUIRE(*again);
  CHECK((*again)->plan == core::claim_plan::kind::lead);
  CHECK((*again)->record->leader_epoch == 2);
  auto b = f.ask(claim("b", false, 0, {"a", "b"}));
  f.settle();
  REQUIRE(*b);
  CHECK((*b)->plan == core::claim_plan::kind::pull);
  CHECK((*b)->from == "a");
}

TEST_CASE("record keeper: of two members electing themselves at once, one wins and the other pulls from it",
          "[cluster][records]") {
  fixture f;
  f.plane->write(f.key(), core::first_record("a", {"b", "c"}, 1));
  auto b = f.ask(claim("b", true, 10, {"b", "c"}));
  auto c = f.ask(claim("c", true, 10, {"b", "c"}));
  // Both read the same revision; b's swap is answered first and wins.
  f.settle();
  REQUIRE(*b);
  REQUIRE(*c);
  CHECK((*b)->plan == core::claim_plan::kind::lead);
  CHECK((*b)->record->leader == "b");
  CHECK((*b)->record->leader_epoch == 2);
  // c lost the race, read b's record again, and now pulls from b.
  CHECK((*c)->ok);
  CHECK((*c)->plan == core::claim_plan::kind::pull);
  CHECK((*c)->from == "b");
}

TEST_CASE("record keeper: a member outside the ISR holds while no ISR member lives", "[cluster][records]") {
  fixture f;
  auto r = core::first_record("a", {"b"}, 1);
  r = core::shrink_isr(r, "a", 1, "b").record;
  f.plane->write(f.key(), r);
  auto b = f.ask(claim("b", true, 50, {"b", "c"}));
  f.settle();
  REQUIRE(*b);
  CHECK((*b)->plan == core::claim_plan::kind::hold);
  CHECK_THAT((*b)->reason, Catch::Contains("in sync: a"));
}

TEST_CASE("record keeper: a deposed leader's ISR change is refused and says it is deposed",
          "[cluster][records]") {
  fixture f;
  f.plane->write(f.key(), core::first_record("a", {"b"}, 1));
  auto shrink = f.ask(isr_change(kind::shrink, "a", 1, "b"));
  f.settle();
  REQUIRE(*shrink);
  CHECK((*shrink)->ok);
  CHECK((*shrink)->record->isr == std::vector<std::string>{"a"});
  // Asked again (its answer was lost, say): done, not refused.
  auto again = f.ask(isr_change(kind::shrink, "a", 1, "b"));
  f.settle();
  CHECK((*again)->ok);
  // Meanwhile b was elected elsewhere: a's next change is refused.
  f.plane->write(f.key(), core::elect(core::first_record("a", {"b"}, 1), "b", 10, {"b"}).record);
  auto late = f.ask(isr_change(kind::expand, "a", 1, "b", 10, 10));
  f.settle();
  REQUIRE(*late);
  CHECK_FALSE((*late)->ok);
  CHECK((*late)->deposed);
  CHECK((*late)->record->leader == "b");
}

TEST_CASE("record keeper: a swap whose answer was lost counts once it is read back as written",
          "[cluster][records]") {
  fixture f;
  f.plane->write(f.key(), core::first_record("a", {}, 1));
  f.plane->fail_next_swap_after_writing = true;
  auto grow = f.ask(isr_change(kind::expand, "a", 1, "b", 7, 7));
  // The failed answer schedules a read again after a pause.
  for (int i = 0; i < 20 && !*grow; ++i) {
    f.settle();
    f.sched->trigger_timeouts();
    f.sched->run();
  }
  f.settle();
  REQUIRE(*grow);
  CHECK((*grow)->ok);
  CHECK((*grow)->record->isr == std::vector<std::string>{"a", "b"});
}

TEST_CASE("record keeper: after a handoff the taker leads, and the old leader may not change the ISR",
          "[cluster][records]") {
  fixture f;
  f.plane->write(f.key(), core::first_record("a", {"b"}, 1));
  record_request s;
  s.what = kind::succeed;
  s.me = "c";
  s.member = "a";
  s.my_end = 30;
  s.live = {"a", "b", "c"};
  // Pulled under an earlier leadership of a: refused, what a acknowledged
  // since may be missing.
  s.at_epoch = 0;
  auto early = f.ask(s);
  f.settle();
  REQUIRE(*early);
  CHECK_FALSE((*early)->ok);
  CHECK_THAT((*early)->reason, Catch::Contains("moved on"));
  s.at_epoch = 1;
  auto took = f.ask(s);
  f.settle();
  REQUIRE(*took);
  CHECK((*took)->ok);
  CHECK((*took)->record->leader == "c");
  CHECK((*took)->record->epochs.back().start == 31);
  auto stale = f.ask(isr_change(kind::shrink, "a", 1, "b"));
  f.settle();
  CHECK((*stale)->deposed);
}
