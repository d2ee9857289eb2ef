// The source registry in a cluster (ADR 0016), with a real file source, a
// real store and a placement the test sets: a source another member placed
// here ("here") starts only once this node's own view of placement agrees.
// Started earlier (this node not having heard of a drain yet), it would pin
// its stream to a hub that keeps what the local store has instead of pulling
// the log from the stream's last holder: the stream would begin again, with
// a new epoch and a resync for every session (a CI failure of the
// PostgreSQL drain test, once in about 25 runs under load).

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/hub_registry.hpp"
#include "actors/hub_router.hpp"
#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"
#include "sources/content_hash.hpp"
#include "sources/file/file_connector.hpp"
#include "sources/source_loop.hpp"
#include "sources/source_registry.hpp"
#include "tests/persistence/temp_dir.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;

// Placement as the test says: every stream is this node's, or another
// member's ("member-b"). A hub this node spawns for a stream it owns pulls
// its log; nobody holds one, so it goes on from the store.
class test_placement final : public actors::hub_router {
 public:
  std::atomic<bool> owns_all{false};
  std::atomic<int> pulls{0};
  std::atomic<int> relays{0};
  std::atomic<int> holds{0};

  std::string owner(const actors::stream_key&) override { return owns_all ? "" : "member-b"; }
  bool taken_over(const actors::stream_key&) override { return false; }
  actors::stream_actor spawn_relay(const actors::stream_key&, const std::string&) override {
    ++relays;  // not expected: the test reads no stream through this node
    return {};
  }
  void pull(const actors::stream_key&, actors::hub_handoff_actor hub) override {
    ++pulls;
    caf::anon_send(hub, actors::adopt_atom::value, actors::stream_handoff_ptr{});
  }
  bool subscribe_elsewhere(const std::string&, const std::string&,
                           const actors::source_subscribe_request_ptr&) override {
    return false;
  }
  actors::source_lease_ptr hold_here(const std::string&, const std::string&, const std::string&,
                                     actors::source_lease_ptr lease) override {
    ++holds;
    return lease;
  }
  std::string self_id() override { return "member-a"; }
  bool has_record(const actors::stream_key&) const override { return false; }
  std::optional<actors::replicator_actor> spawn_replicator(const actors::stream_key&,
                                                           actors::replication_sink_actor) override {
    return std::nullopt;
  }
  void fenced(const actors::stream_key&, const std::string&) override {}
  std::optional<actors::stream_tail> read_tail(const actors::stream_key&, std::size_t,
                                               std::chrono::milliseconds) override {
    return std::nullopt;
  }
};

// A node's source side: a files connector on a temp root, its registry,
// the hubs and the store, placed by test_placement.
struct source_node {
  persistence::testing::temp_dir dir;
  std::string root = std::filesystem::canonical(dir.str()).string() + "/root";
  std::unique_ptr<persistence::store> store;
  std::optional<persistence::group_committer> committer;
  caf::actor_system_config caf_cfg;
  std::optional<caf::actor_system> system;
  std::optional<actors::hub_registry> hubs;
  test_placement placement;
  std::optional<sources::source_loop> loop;
  actors::source_registry_actor registry;

  source_node() {
    std::filesystem::create_directories(root);
    std::ofstream(root + "/a.txt") << "one";
    REQUIRE(persistence::store::open(dir.db(), persistence::durability::batch, &store).ok());
    committer.emplace(*store);
    system.emplace(caf_cfg);
    hubs.emplace(*system, *store, *committer, actors::hub_defaults{});
    hubs->set_router(&placement);
    loop.emplace([this](boost::asio::io_context& ioc) {
      std::vector<std::unique_ptr<sources::connector>> out;
      out.push_back(std::make_unique<sources::file::file_connector>(ioc, sources::file::file_config{{root}}));
      return out;
    });
    loop->start();
    sources::source_registry_config cfg;
    cfg.upstreams = &loop->upstreams();
    cfg.loop = &loop->context();
    cfg.store = store.get();
    cfg.committer = &*committer;
    cfg.hubs = &*hubs;
    registry = system->spawn(sources::source_registry, cfg);
  }

  ~source_node() {
    {
      caf::scoped_actor self{*system};
      self->send(registry, actors::source_stop_atom::value);
      self->wait_for(registry);
    }
    loop->stop();
    for (auto& h : hubs->all()) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
    system->await_all_actors_done();
    hubs->set_router(nullptr);
  }

  // Asks as a member that placed the source here does (`here`), or as a
  // subscriber of this node.
  actors::source_subscribe_reply subscribe_here(const std::string& uri, bool here = true) {
    auto answer = std::make_shared<std::promise<actors::source_subscribe_reply>>();
    auto req = std::make_shared<actors::source_subscribe_request>();
    req->tenant = "default";
    req->uri = uri;
    req->here = here;
    req->reply = [answer](actors::source_subscribe_reply r) { answer->set_value(std::move(r)); };
    caf::anon_send(registry, actors::source_sub_atom::value, actors::source_subscribe_request_ptr(req));
    auto reply = answer->get_future();
    REQUIRE(reply.wait_for(10s) == std::future_status::ready);
    return reply.get();
  }
};

}  // namespace

TEST_CASE(
    "a source placed here by another member waits for this node's view: refused with retry while "
    "another member owns its stream here, started (and its log pulled) once this node owns it",
    "[sources][cluster]") {
  source_node node;
  const auto uri = "file://" + node.root + "/a.txt";

  auto early = node.subscribe_here(uri);
  REQUIRE(early.error);
  CHECK(early.error->kind == actors::watch_error_kind::unavailable);
  CHECK_THAT(early.error->message, Catch::Contains("retry"));
  CHECK(!early.lease);
  // Nothing started: no pin, no hub, no relay.
  CHECK(node.hubs->pinned_keys().empty());
  CHECK(node.hubs->hub_count() == 0);
  CHECK(node.placement.relays == 0);

  node.placement.owns_all = true;
  auto agreed = node.subscribe_here(uri);
  INFO("error: " << (agreed.error ? agreed.error->message : std::string("none")));
  REQUIRE(!agreed.error);
  REQUIRE(agreed.lease);
  actors::stream_key key{"default", agreed.stream};
  CHECK(agreed.stream == sources::source_stream_name(agreed.key));
  CHECK(node.hubs->pinned(key));
  // The stream's hub asked for the log its last holder may have.
  CHECK(node.placement.pulls == 1);
}

TEST_CASE(
    "a source returned to its placement owner closes and unpins its stream before it answers, one "
    "that does not run is not returned, and a subscriber of this node holds its lease through the "
    "cluster's hold",
    "[sources][cluster]") {
  source_node node;
  node.placement.owns_all = true;
  const auto uri = "file://" + node.root + "/a.txt";

  auto mine = node.subscribe_here(uri, false);
  INFO("error: " << (mine.error ? mine.error->message : std::string("none")));
  REQUIRE(!mine.error);
  CHECK(node.placement.holds == 1);  // a subscriber of this node: a hold
  auto placed = node.subscribe_here(uri);
  REQUIRE(!placed.error);
  CHECK(node.placement.holds == 1);  // placed here by a member: that member holds it
  actors::stream_key key{"default", mine.stream};
  REQUIRE(node.hubs->pinned(key));

  // Another stream's return: nothing runs for it, so nothing is returned.
  caf::scoped_actor self{*node.system};
  auto returned = [&](const std::string& stream) {
    std::optional<bool> out;
    self->request(node.registry, std::chrono::seconds(10), actors::source_return_atom::value, key.tenant,
                  stream)
        .receive([&](bool closed) { out = closed; },
                 [&](caf::error& err) { FAIL(node.system->render(err)); });
    return out;
  };
  CHECK(returned("src:0000000000000000") == false);
  CHECK(node.hubs->pinned(key));

  // Its own: answered once it is down and its stream unpinned.
  CHECK(returned(key.name) == true);
  CHECK_FALSE(node.hubs->pinned(key));
  CHECK(returned(key.name) == false);  // gone: nothing left to return

  // The next subscriber starts it again.
  mine.lease.reset();
  placed.lease.reset();
  auto again = node.subscribe_here(uri, false);
  REQUIRE(!again.error);
  CHECK(node.hubs->pinned(key));
}
