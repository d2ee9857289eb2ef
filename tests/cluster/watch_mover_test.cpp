// The watch mover (cluster/watch_mover.hpp) on CAF's test coordinator,
// with a watch manager the test answers and a peer's node actor that takes
// or refuses what it is handed: a lost member's watch starts on the member
// that owns it now, once; two copies of one watch settle on one; a watch
// placed on a member that joins moves there only once that member has
// restored its own, and runs here again if the hand-over fails.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cluster/watch_mover.hpp"
#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/fake_watch_manager.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;

using tidings::testing::fake_manager;
using tidings::testing::manager_log;

// Member "b"'s node actor: what it was sent, and whether it takes a watch.
struct peer_log {
  std::vector<proto::WatchCopies> copies;
  std::vector<proto::WatchStart> handed;
  bool refuse = false;
};

caf::behavior peer_node(caf::event_based_actor*, const std::shared_ptr<peer_log>& log) {
  return {
      [log](wcopy_atom, const std::string& bytes) {
        proto::WatchCopies c;
        REQUIRE(c.ParseFromString(bytes));
        log->copies.push_back(c);
      },
      [log](wstart_here_atom, const std::string& bytes) {
        proto::WatchStart p;
        REQUIRE(p.ParseFromString(bytes));
        log->handed.push_back(p);
        proto::WatchStartReply r;
        r.set_ok(!log->refuse);
        if (log->refuse) r.set_error("no room");
        return r.SerializeAsString();
      },
  };
}

// This node's node actor: how often it was told its pins may have changed.
// (Spawned with an argument: CAF 0.17 spawning a function without any
// binds a null argument tuple, which UBSan reports.)
caf::behavior own_node(caf::event_based_actor*, const std::shared_ptr<int>& pins_due) {
  return {[pins_due](pins_due_atom) { ++*pins_due; }};
}

persistence::watch_spec spec_named(const std::string& name) {
  persistence::watch_spec s;
  s.id = {"t1", name};
  s.uri = "stream://orders";
  return s;
}

// A watch name that rendezvous over {a, b} puts on `member`.
std::string name_placed_on(const std::string& member) {
  const std::vector<std::string> both{"a", "b"};
  for (int k = 0;; ++k) {
    auto name = "w" + std::to_string(k);
    if (core::owner_of(both, "t1", "watch:" + name) == member) return name;
  }
}

struct fixture : tidings::testing::coordinated_system {
  std::shared_ptr<manager_log> manager = std::make_shared<manager_log>();
  std::shared_ptr<peer_log> peer = std::make_shared<peer_log>();
  std::shared_ptr<int> pins_due = std::make_shared<int>(0);
  caf::actor node_b;
  watch_mover_actor mover;
  std::string owner;  // what placement with pins says ("" = here)

  fixture() {
    node_b = sys->spawn(peer_node, peer);
    watch_mover_config mc;
    mc.self_id = "a";
    mc.node = sys->spawn(own_node, pins_due);
    mc.watches = sys->spawn(fake_manager, manager);
    mc.owner_of = [this](const std::string&, const std::string&) { return owner; };
    mover = sys->spawn(watch_mover, std::move(mc));
    sched->run();
  }
  ~fixture() {
    caf::anon_send_exit(mover, caf::exit_reason::user_shutdown);
    sched->run();
  }

  void members(std::vector<std::string> placement, bool b_up) {
    auto m = std::make_shared<mover_members>();
    m->placement = std::move(placement);
    if (b_up) m->up["b"] = {node_b, false};
    caf::anon_send(mover, members_atom::value, mover_members_ptr(std::move(m)));
    sched->run();
  }

  // The manager answers every specs request made so far with `running`.
  void specs(const std::vector<std::string>& running, bool restored = true) {
    auto pending = std::move(manager->specs);
    manager->specs.clear();
    std::vector<actors::watch_spec_state> out;
    for (const auto& n : running) out.push_back({spec_named(n), "running"});
    for (auto& r : pending) r->reply(out, restored);
    sched->run();
  }

  void copies_from_b(const std::vector<std::string>& running, bool restored) {
    proto::WatchCopies c;
    c.set_holder("b");
    c.set_restored(restored);
    for (const auto& n : running) {
      auto* w = c.add_watches();
      *w = to_proto(spec_named(n));
      w->set_running(true);
    }
    caf::anon_send(mover, wcopy_atom::value, c.SerializeAsString());
    sched->run();
  }
};

}  // namespace

TEST_CASE("a lost member's watch starts on the member that owns it now, once", "[watch_mover]") {
  fixture f;
  f.members({"a", "b"}, true);
  f.specs({});
  f.copies_from_b({"w1"}, true);
  CHECK(f.peer->copies.size() == 1);  // ours went to b when it appeared

  f.members({"a"}, false);
  caf::anon_send(f.mover, member_gone_atom::value, std::string("b"));
  f.sched->run();
  REQUIRE(f.manager->starts.size() == 1);
  CHECK(f.manager->starts[0]->adopt);
  CHECK(f.manager->starts[0]->spec.id.name == "w1");

  auto due = *f.pins_due;
  f.manager->starts[0]->reply(actors::watch_start_reply{});
  f.sched->run();
  CHECK(*f.pins_due > due);  // the node sends its pins at once, with the watch's stream
  f.specs({"w1"});           // it runs here now: the orphan is gone
  caf::anon_send(f.mover, tick_atom::value, false);
  f.sched->run();
  f.specs({"w1"});
  CHECK(f.manager->starts.size() == 1);
}

TEST_CASE("a lost member's watch owned by another survivor is left to it", "[watch_mover]") {
  fixture f;
  f.members({"a", "b"}, true);
  f.specs({});
  f.copies_from_b({"w1"}, true);
  f.owner = "c";
  caf::anon_send(f.mover, member_gone_atom::value, std::string("b"));
  f.sched->run();
  CHECK(f.manager->starts.empty());
}

TEST_CASE("two copies of one watch settle where rendezvous over the two puts it", "[watch_mover]") {
  fixture f;
  const auto theirs = name_placed_on("b");
  const auto ours = name_placed_on("a");
  f.members({"a", "b"}, true);
  f.specs({theirs, ours});
  f.copies_from_b({theirs, ours}, true);
  REQUIRE(f.manager->stops.size() == 1);
  CHECK(f.manager->stops[0]->id.name == theirs);
  CHECK(f.manager->stops[0]->duplicate);  // it does not wait on the stream b's copy holds
}

TEST_CASE("a watch placed on a member that joins moves there once it has restored its own, with its position",
          "[watch_mover]") {
  fixture f;
  const auto name = name_placed_on("b");
  f.members({"a"}, false);
  f.specs({name});
  f.members({"a", "b"}, true);
  f.specs({name});
  f.copies_from_b({}, false);  // b has not restored yet: it may be about to run it itself
  CHECK(f.manager->releases.empty());

  f.copies_from_b({}, true);
  REQUIRE(f.manager->releases.size() == 1);
  CHECK(f.manager->releases[0]->id.name == name);
  persistence::watch_progress at;
  at.cursor = {7, 42};
  f.manager->releases[0]->reply(std::nullopt, spec_named(name), at);
  f.sched->run();
  REQUIRE(f.peer->handed.size() == 1);
  CHECK(f.peer->handed[0].name() == name);
  CHECK(f.peer->handed[0].adopt());
  CHECK(f.peer->handed[0].progress().seq() == 42);
  REQUIRE(f.manager->stops.size() == 1);  // forgotten here once b runs it
  CHECK(f.manager->stops[0]->id.name == name);
  CHECK(!f.manager->stops[0]->duplicate);
}

TEST_CASE("a watch the joined member refuses runs here again from its released position", "[watch_mover]") {
  fixture f;
  const auto name = name_placed_on("b");
  f.peer->refuse = true;
  f.members({"a", "b"}, true);
  f.specs({name});
  f.copies_from_b({}, true);
  REQUIRE(f.manager->releases.size() == 1);
  f.manager->releases[0]->reply(std::nullopt, spec_named(name), std::nullopt);
  f.sched->run();
  CHECK(f.peer->handed.size() == 1);
  CHECK(f.manager->stops.empty());
  REQUIRE(f.manager->starts.size() == 1);
  CHECK(f.manager->starts[0]->adopt);
  CHECK(f.manager->starts[0]->spec.id.name == name);
  // Not tried again at once.
  f.copies_from_b({}, true);
  CHECK(f.manager->releases.size() == 1);
}

TEST_CASE("a watch stopped everywhere is not started again from a lost member's copy", "[watch_mover]") {
  fixture f;
  f.members({"a", "b"}, true);
  f.specs({});
  f.copies_from_b({"w1"}, true);
  f.owner = "c";  // another survivor owns it: kept here as an orphan, not started
  caf::anon_send(f.mover, member_gone_atom::value, std::string("b"));
  f.sched->run();
  REQUIRE(f.manager->starts.empty());

  auto forgotten = std::make_shared<bool>(false);
  f.sys->spawn(
      [](caf::event_based_actor* self, const watch_mover_actor& mover,
         const std::shared_ptr<bool>& answered) {
        self->request(mover, caf::infinite, stopping_atom::value, std::string("t1"), std::string("w1"))
            .then([answered](bool) { *answered = true; });
      },
      f.mover, forgotten);
  f.sched->run();
  CHECK(*forgotten);

  // Even once this node owns it, the stopped watch stays stopped.
  f.owner = "";
  caf::anon_send(f.mover, tick_atom::value, false);
  f.sched->run();
  f.specs({});
  CHECK(f.manager->starts.empty());
}

TEST_CASE("a starting node restores once every up member said what it runs, leaving theirs alone",
          "[watch_mover]") {
  fixture f;
  f.members({"a", "b"}, true);
  caf::anon_send(f.mover, restore_watches_atom::value);
  f.sched->run();
  CHECK(f.manager->restores.empty());  // b has not said what it runs

  f.copies_from_b({"w1"}, true);
  REQUIRE(f.manager->restores.size() == 1);
  const auto& elsewhere = f.manager->restores[0]->running_elsewhere;
  REQUIRE(elsewhere.size() == 1);
  CHECK(elsewhere.at({"t1", "w1"}) == "b");
  // Once: later copies do not restore again.
  f.copies_from_b({"w1", "w2"}, true);
  f.sched->trigger_timeouts();
  f.sched->run();
  CHECK(f.manager->restores.size() == 1);
}

TEST_CASE("a starting node restores everything after a bound when a member stays silent", "[watch_mover]") {
  fixture f;
  f.members({"a", "b"}, true);
  caf::anon_send(f.mover, restore_watches_atom::value);
  f.sched->run();
  f.sched->advance_time(std::chrono::milliseconds(2999));
  f.sched->run();
  CHECK(f.manager->restores.empty());
  f.sched->advance_time(std::chrono::milliseconds(1));
  f.sched->run();
  REQUIRE(f.manager->restores.size() == 1);
  CHECK(f.manager->restores[0]->running_elsewhere.empty());
}

TEST_CASE("a watch handed here is not stopped for the copy its old member sent before the hand-over",
          "[watch_mover]") {
  fixture f;
  const auto theirs = name_placed_on("b");
  f.members({"a", "b"}, true);
  f.specs({});
  f.copies_from_b({theirs}, true);  // b runs it, then hands it here
  caf::anon_send(f.mover, tick_atom::value, false);
  f.sched->run();
  f.specs({theirs});
  CHECK(f.manager->stops.empty());
  // b's next copies, sent after it let go, no longer list it...
  f.copies_from_b({}, true);
  CHECK(f.manager->stops.empty());
  // ...and copies heard since it runs here that do list it running are a
  // duplicate's: settled as such.
  f.copies_from_b({theirs}, true);
  REQUIRE(f.manager->stops.size() == 1);
  CHECK(f.manager->stops[0]->duplicate);
}
