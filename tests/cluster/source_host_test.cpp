// The source host (cluster/source_host.hpp) on CAF's test coordinator,
// against a source registry the test answers: a member's subscription
// becomes a lease it can let go; a lost member's leases end and nobody
// else's; a drain ends every lease and refuses what comes after, even an
// answer that was already on its way.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/source_host.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;

// What the registry was asked, and the leases that were let go.
struct registry_log {
  std::vector<actors::source_subscribe_request_ptr> asked;
  std::set<std::uint64_t> released;
};

actors::source_registry_actor::behavior_type fake_registry(actors::source_registry_actor::pointer,
                                                           const std::shared_ptr<registry_log>& log) {
  return {
      [log](actors::source_sub_atom, const actors::source_subscribe_request_ptr& req) {
        log->asked.push_back(req);
      },
      [](actors::source_unsub_atom, std::uint64_t) {},
      [](actors::source_list_atom, const actors::source_list_request_ptr&) {},
      [](actors::task_atom, const actors::actor_task&) {},
      [](actors::source_reload_atom, const actors::source_reload_request_ptr&) {},
      [](actors::source_handoff_atom, const actors::actor_task&) {},
      [](actors::source_return_atom, const std::string&, const std::string&) { return false; },
      [](actors::source_stop_atom) {},
  };
}

// Sends one request to the host and keeps its answer. (Spawned with
// arguments: CAF 0.17 spawning a function without any binds a null
// argument tuple, which UBSan reports.)
void ask(caf::event_based_actor* self, const source_host_actor& host, const std::string& bytes,
         const std::shared_ptr<proto::SourceSubReply>& answer) {
  self->request(host, caf::infinite, srcsub_atom::value, bytes).then([answer](const std::string& reply) {
    REQUIRE(answer->ParseFromString(reply));
  });
}

std::string request_from(const std::string& node, const std::string& uri = "mcp://files/a") {
  proto::SourceSubRequest p;
  p.set_tenant("t1");
  p.set_uri(uri);
  p.set_requester(node);
  return p.SerializeAsString();
}

struct fixture : tidings::testing::coordinated_system {
  std::shared_ptr<registry_log> log = std::make_shared<registry_log>();
  source_host_actor host;

  fixture() {
    host = sys->spawn(source_host, sys->spawn(fake_registry, log));
    sched->run();
  }
  ~fixture() {
    caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
    sched->run();
  }

  std::shared_ptr<proto::SourceSubReply> subscribe(const std::string& bytes) {
    auto answer = std::make_shared<proto::SourceSubReply>();
    sys->spawn(ask, host, bytes, answer);
    sched->run();
    return answer;
  }

  // The registry answers its `i`th request with a running source and a
  // lease numbered `lease`.
  void answer_ok(std::size_t i, std::uint64_t lease) {
    REQUIRE(log->asked.size() > i);
    actors::source_subscribe_reply r;
    r.stream = "src:abc";
    r.key = "files|a";
    r.shape = "state";
    r.lease = std::make_shared<actors::source_lease>(lease,
                                                     [l = log](std::uint64_t id) { l->released.insert(id); });
    log->asked[i]->reply(std::move(r));
    sched->run();
  }
};

}  // namespace

TEST_CASE("a member's subscription runs the source here and answers with a lease it can let go",
          "[source_host]") {
  fixture f;
  auto answer = f.subscribe(request_from("b"));
  REQUIRE(f.log->asked.size() == 1);
  CHECK(f.log->asked[0]->tenant == "t1");
  CHECK(f.log->asked[0]->uri == "mcp://files/a");
  CHECK(f.log->asked[0]->here);
  CHECK_FALSE(answer->ok());  // nothing until the source's first read

  f.answer_ok(0, 41);
  REQUIRE(answer->ok());
  CHECK(answer->stream() == "src:abc");
  CHECK(answer->key() == "files|a");
  CHECK(answer->shape() == "state");
  CHECK(answer->lease() != 0);
  CHECK(f.log->released.empty());

  caf::anon_send(f.host, srcunsub_atom::value, answer->lease());
  f.sched->run();
  CHECK(f.log->released == std::set<std::uint64_t>{41});
}

TEST_CASE("a lost member's leases end, and only its own", "[source_host]") {
  fixture f;
  auto from_b = f.subscribe(request_from("b"));
  auto from_c = f.subscribe(request_from("c"));
  auto again_b = f.subscribe(request_from("b", "mcp://files/z"));
  f.answer_ok(0, 1);
  f.answer_ok(1, 2);
  f.answer_ok(2, 3);
  REQUIRE(from_b->ok());
  REQUIRE(from_c->ok());
  REQUIRE(again_b->ok());
  CHECK(from_b->lease() != from_c->lease());

  caf::anon_send(f.host, member_gone_atom::value, std::string("b"));
  f.sched->run();
  CHECK(f.log->released == std::set<std::uint64_t>{1, 3});
}

TEST_CASE("a draining node ends every lease and refuses what comes after, an answer already on its way too",
          "[source_host]") {
  fixture f;
  auto held = f.subscribe(request_from("b"));
  f.answer_ok(0, 1);
  REQUIRE(held->ok());
  auto pending = f.subscribe(request_from("c"));
  REQUIRE(f.log->asked.size() == 2);

  caf::anon_send(f.host, drain_atom::value);
  f.sched->run();
  CHECK(f.log->released == std::set<std::uint64_t>{1});

  // The registry answers the request made before the drain: refused, and
  // its lease is not kept.
  f.answer_ok(1, 2);
  CHECK_FALSE(pending->ok());
  CHECK(pending->error().find("draining") != std::string::npos);
  CHECK(f.log->released == std::set<std::uint64_t>{1, 2});

  auto late = f.subscribe(request_from("d"));
  CHECK(f.log->asked.size() == 2);  // never reaches the registry
  CHECK_FALSE(late->ok());
  CHECK(late->error_kind() == static_cast<int>(actors::watch_error_kind::unavailable));
}

TEST_CASE("an unreadable subscription or a failed source is refused with the reason", "[source_host]") {
  fixture f;
  auto unreadable = f.subscribe("not a protobuf \xff\xff");
  CHECK_FALSE(unreadable->ok());
  CHECK(unreadable->error_kind() == static_cast<int>(actors::watch_error_kind::bad_request));
  CHECK(f.log->asked.empty());

  auto failing = f.subscribe(request_from("b"));
  REQUIRE(f.log->asked.size() == 1);
  actors::source_subscribe_reply r;
  r.error = actors::watch_error{actors::watch_error_kind::upstream, "files: connection refused"};
  f.log->asked[0]->reply(std::move(r));
  f.sched->run();
  CHECK_FALSE(failing->ok());
  CHECK(failing->error_kind() == static_cast<int>(actors::watch_error_kind::upstream));
  CHECK(failing->error() == "files: connection refused");
}
