// The watch router (cluster/watch_router.hpp) on CAF's test coordinator,
// with a watch manager the test answers and two members' node actors: this
// node's (which hands the router's own messages back to it, as the real
// one does) and a peer's that answers as the test says. A start goes where
// the watch runs already, else where placement puts it; a list gathers
// every member and says when one did not answer; a draining node starts
// only watches moved to it.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cluster/watch_router.hpp"
#include "cluster/wire.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/fake_watch_manager.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;

using tidings::testing::fake_manager;
using tidings::testing::manager_log;

// What reached a node actor.
struct node_log {
  int changed = 0;
  std::vector<std::string> stopping;
  std::vector<std::string> started_here;  // WatchStart names (the peer)
  bool silent = false;                    // the peer answers no list
};

// This node's node actor: the router's messages go back to the router.
caf::behavior own_node(caf::event_based_actor* self, const std::shared_ptr<watch_router_actor>& router,
                       const std::shared_ptr<node_log>& log) {
  return {
      [self, router](wstart_here_atom a, const std::string& bytes) {
        return self->delegate(*router, a, bytes);
      },
      [self, router](wlist_here_atom a, const std::string& tenant) {
        return self->delegate(*router, a, tenant);
      },
      [self, router](wstop_here_atom a, const std::string& tenant, const std::string& name) {
        return self->delegate(*router, a, tenant, name);
      },
      [log](watches_changed_atom) { ++log->changed; },
      [log](stopping_atom, const std::string&, const std::string& name) {
        log->stopping.push_back(name);
        return true;
      },
  };
}

// Member "b": runs `running` (if not empty) and starts whatever it is sent.
caf::behavior peer_node(caf::event_based_actor*, const std::shared_ptr<node_log>& log,
                        const std::string& running) {
  return {
      [log](wstart_here_atom, const std::string& bytes) {
        proto::WatchStart p;
        REQUIRE(p.ParseFromString(bytes));
        log->started_here.push_back(p.name());
        proto::WatchStartReply r;
        r.set_ok(true);
        return r.SerializeAsString();
      },
      [log, running](wlist_here_atom, const std::string&) -> caf::result<std::string> {
        if (log->silent) return caf::skip;  // never answers: the asker times out
        proto::WatchList l;
        if (!running.empty()) {
          auto* w = l.add_watches();
          w->set_name(running);
          w->set_state("running");
          w->set_node("b");
        }
        return l.SerializeAsString();
      },
      [](wstop_here_atom, const std::string&, const std::string&) {
        proto::WatchStopReply r;
        r.set_ok(true);
        return r.SerializeAsString();
      },
  };
}

void ask(caf::event_based_actor* self, const watch_router_actor& router, const caf::message& msg,
         const std::shared_ptr<std::string>& answer) {
  self->request(caf::actor_cast<caf::actor>(router), caf::infinite, msg)
      .then([answer](const std::string& reply) { *answer = reply; });
}

std::string start_of(const std::string& name, bool adopt = false) {
  proto::WatchStart p;
  p.set_tenant("t1");
  p.set_name(name);
  p.set_uri("stream://orders");
  p.set_adopt(adopt);
  return p.SerializeAsString();
}

struct fixture : tidings::testing::coordinated_system {
  std::shared_ptr<manager_log> manager = std::make_shared<manager_log>();
  std::shared_ptr<node_log> own = std::make_shared<node_log>();
  std::shared_ptr<node_log> peer = std::make_shared<node_log>();
  std::shared_ptr<watch_router_actor> router = std::make_shared<watch_router_actor>();
  std::string placed_on;  // what placement says for every watch ("" = here)

  explicit fixture(const std::string& peer_runs = "") {
    auto node_a = sys->spawn(own_node, router, own);
    auto node_b = sys->spawn(peer_node, peer, peer_runs);
    watch_router_config rc;
    rc.self_id = "a";
    rc.node = node_a;
    rc.watches = sys->spawn(fake_manager, manager);
    rc.owner_of = [this](const std::string&, const std::string&) { return placed_on; };
    *router = sys->spawn(watch_router, std::move(rc));
    auto members = std::make_shared<router_members>(router_members{{"a", node_a}, {"b", node_b}});
    caf::anon_send(*router, members_atom::value, router_members_ptr(members));
    sched->run();
  }
  ~fixture() {
    caf::anon_send_exit(*router, caf::exit_reason::user_shutdown);
    sched->run();
  }

  // This node's manager lists nothing (a start first asks every member
  // whether the watch runs there).
  void answer_lists() {
    auto pending = std::move(manager->lists);
    manager->lists.clear();
    for (auto& r : pending) r->reply({});
    sched->run();
  }

  std::shared_ptr<std::string> send(const caf::message& msg) {
    auto answer = std::make_shared<std::string>();
    sys->spawn(ask, *router, msg, answer);
    sched->run();
    return answer;
  }
};

proto::WatchStartReply start_reply(const std::string& bytes) {
  proto::WatchStartReply r;
  REQUIRE(r.ParseFromString(bytes));
  return r;
}

}  // namespace

TEST_CASE("a start goes to the member placement names, and one placed here runs here", "[watch_router]") {
  fixture f;
  f.placed_on = "b";
  auto there = f.send(caf::make_message(wstart_atom::value, start_of("w1")));
  f.answer_lists();
  CHECK(start_reply(*there).ok());
  CHECK(f.peer->started_here == std::vector<std::string>{"w1"});
  CHECK(f.manager->starts.empty());

  f.placed_on = "";
  auto here = f.send(caf::make_message(wstart_atom::value, start_of("w2")));
  f.answer_lists();
  REQUIRE(f.manager->starts.size() == 1);
  CHECK(f.manager->starts[0]->spec.id.name == "w2");
  CHECK(here->empty());  // answered when the manager is
  CHECK(f.own->changed == 0);
  f.manager->starts[0]->reply(actors::watch_start_reply{std::nullopt, "state", false});
  f.sched->run();
  CHECK(start_reply(*here).ok());
  CHECK(start_reply(*here).shape() == "state");
  CHECK(f.own->changed == 1);  // the other members get the copies at once
}

TEST_CASE("a start goes where a watch of that name runs already, whatever placement says", "[watch_router]") {
  fixture f("w1");
  f.placed_on = "";
  auto answer = f.send(caf::make_message(wstart_atom::value, start_of("w1")));
  f.answer_lists();
  CHECK(start_reply(*answer).ok());
  CHECK(f.peer->started_here == std::vector<std::string>{"w1"});
  CHECK(f.manager->starts.empty());
}

TEST_CASE("a list gathers every member and is partial when one does not answer", "[watch_router]") {
  fixture f("w9");
  f.peer->silent = true;
  auto answer = f.send(caf::make_message(wlist_atom::value, std::string("t1")));
  REQUIRE(f.manager->lists.size() == 1);
  actors::watch_info mine;
  mine.name = "w1";
  mine.state = "running";
  f.manager->lists[0]->reply({mine});
  f.sched->run();
  CHECK(answer->empty());  // still waiting on b
  f.sched->trigger_timeouts();
  f.sched->run();
  proto::WatchList list;
  REQUIRE(list.ParseFromString(*answer));
  CHECK(list.partial());
  REQUIRE(list.watches_size() == 1);
  CHECK(list.watches(0).name() == "w1");
  CHECK(list.watches(0).node() == "a");
}

TEST_CASE(
    "a stop tells this node to forget the watch's orphaned copy, and a draining node starts only moved "
    "watches",
    "[watch_router]") {
  fixture f;
  auto stopped = f.send(caf::make_message(wstop_atom::value, std::string("t1"), std::string("w1")));
  CHECK(f.own->stopping == std::vector<std::string>{"w1"});
  REQUIRE(f.manager->stops.size() == 1);
  f.manager->stops[0]->reply(std::nullopt, true);
  f.sched->run();
  proto::WatchStopReply r;
  REQUIRE(r.ParseFromString(*stopped));
  CHECK(r.ok());
  CHECK(r.stopped());

  caf::anon_send(*f.router, drain_atom::value);
  f.sched->run();
  auto refused = f.send(caf::make_message(wstart_here_atom::value, start_of("w2")));
  CHECK_FALSE(start_reply(*refused).ok());
  CHECK(start_reply(*refused).error().find("draining") != std::string::npos);
  CHECK(f.manager->starts.empty());
  f.send(caf::make_message(wstart_here_atom::value, start_of("w3", true)));
  REQUIRE(f.manager->starts.size() == 1);
  CHECK(f.manager->starts[0]->adopt);
}
