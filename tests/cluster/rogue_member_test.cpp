// Issue 28, item 5 (ADR 0024): a process pointed at a cluster's etcd and
// ports is no member unless it holds the cluster's secret, and a member
// whose security configuration (tenants, keys and cluster TLS) differs is refused too.
// Either way the members log who they refused and why, keep their streams
// among themselves, and the odd one out says so and serves no stream: it
// is never handed a tenant's events nor later publishes.

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "client/http_client.hpp"
#include "cluster/atoms.hpp"
#include "cluster/cluster_secret.hpp"
#include "proto/cluster.pb.h"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// A tidingsd pointed at `cluster`'s etcd and prefix with `secret`, and any
// `extra` flags: a would-be fourth member.
std::unique_ptr<tidingsd_process> outsider(const cluster_nodes& cluster, const temp_dir& dir,
                                           const std::string& secret, std::vector<std::string> extra = {}) {
  auto args = cluster.member_args(dir.path(), secret);
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<tidingsd_process>(dir.path() / "data", std::move(args), 20s);
}

// What the members and the outsider must show once it has registered.
// `serves_http`: the outsider has no tenants either, so its API answers
// without a token (one with tenants would refuse a request without one).
void expect_refused(cluster_nodes& cluster, tidingsd_process& odd, const std::string& stream,
                    const std::string& reason, bool serves_http) {
  INFO("outsider's log:\n" << odd.log() << "\nmembers' logs:\n" << cluster.logs());
  REQUIRE(odd.await_log("\"event\":\"cluster.outvoted\"", 10s));
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    REQUIRE(cluster.process(i).await_log("\"event\":\"cluster.member_refused\"", 10s));
    CHECK(cluster.process(i).log().find(reason) != std::string::npos);
  }
  CHECK(odd.log().find(reason) != std::string::npos);
  // The members list exactly each other, connected.
  cluster.await_converged(10s);
  // A load balancer takes the odd one out of rotation (/readyz needs no token).
  auto ready = client::request(odd.endpoint(), "GET", "/readyz", "", {}, 10s);
  CHECK(ready.status == 503);
  CHECK(ready.body.find("not a cluster member") != std::string::npos);
  for (std::size_t i = 0; i < cluster.size(); ++i)
    CHECK(client::request(cluster.endpoint(i), "GET", "/readyz", "", {}, 10s).status == 200);

  if (serves_http) {
    // The outsider serves nothing of the cluster's: no read, no publish.
    auto read = client::request(odd.endpoint(), "GET", events_target(stream), "", {}, 10s);
    INFO("outsider's read: " << read.status << " " << read.body);
    CHECK(read.status == 503);
    CHECK(read.body.find("\"/a\"") == std::string::npos);
    auto put =
        client::request(odd.endpoint(), "POST", events_target(stream), event_json("/x", "ADDED", json{}),
                        {{"Content-Type", "application/json"}}, 10s);
    INFO("outsider's publish: " << put.status << " " << put.body);
    CHECK(put.status == 503);
  }

  // The members go on: a later publish is read back through both, with the first.
  publish(cluster.endpoint(1), stream, event_json("/b", "ADDED", json{{"n", 2}}));
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto r = client::request(cluster.endpoint(i), "GET", events_target(stream), "", {}, 10s);
    INFO("node " << i << ": " << r.body);
    REQUIRE(r.status == 200);
    CHECK(r.body.find("\"/a\"") != std::string::npos);
    CHECK(r.body.find("\"/b\"") != std::string::npos);
  }
  CHECK(odd.log().find("cluster.stream_taken") == std::string::npos);
  CHECK(odd.log().find("cluster.member_connected") == std::string::npos);
}

// Two members with a stream that holds one event ("/a"), owned by node 0;
// a directory for the outsider.
struct guarded_cluster {
  cluster_nodes cluster{2};
  std::string stream = cluster.owned_stream(0, "guarded");
  temp_dir dir;

  guarded_cluster() { publish(cluster.endpoint(0), stream, event_json("/a", "ADDED", json{{"n", 1}})); }
};

}  // namespace

TEST_CASE(
    "a process with another cluster secret is refused by every member, is handed no stream, and serves none",
    "[cluster][security]") {
  guarded_cluster g;
  auto rogue = outsider(g.cluster, g.dir, random_cluster_secret());
  expect_refused(g.cluster, *rogue, g.stream, "sealed with another cluster secret", true);
}

TEST_CASE(
    "a member whose tenants and keys differ is refused on both sides with a clear log line, and serves no "
    "stream",
    "[cluster][security]") {
  guarded_cluster g;
  std::ofstream(g.dir.path() / "tidings.yaml")
      << "tenants:\n"
         "  - id: acme\n"
         "    keys:\n"
         "      - {kid: k1, alg: HS256, secret: \"acme-secret-0123456789abcdef0123\"}\n";
  auto odd =
      outsider(g.cluster, g.dir, g.cluster.secret(), {"--config", (g.dir.path() / "tidings.yaml").string()});
  expect_refused(g.cluster, *odd, g.stream, "security configuration (tenants, keys and cluster TLS) differs",
                 false);
}

TEST_CASE(
    "a process that connects to a member's cluster port gets only its gate: node messages and joins without "
    "a proof are refused",
    "[cluster][security]") {
  guarded_cluster g;
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  const auto& address = g.cluster.cluster_address(0);
  caf::actor gate;
  self->request(sys.middleman().actor_handle(), 5s, caf::connect_atom::value, std::string("127.0.0.1"),
                g.cluster.cluster_port(0))
      .receive([&](const caf::node_id&, caf::strong_actor_ptr& ptr,
                   const std::set<std::string>&) { gate = caf::actor_cast<caf::actor>(ptr); },
               [&](caf::error& e) { FAIL("connecting to " << address << ": " << sys.render(e)); });
  REQUIRE(gate);

  // What a member answers to its peers, asked of what is published: nothing.
  auto refused = [&](caf::message m) {
    std::string outcome = "no answer";
    self->request(gate, 5s, std::move(m))
        .receive([&](caf::message& reply) { outcome = "answered: " + to_string(reply); },
                 [&](caf::error& e) { outcome = sys.render(e); });
    INFO(outcome);
    return outcome.find("answered") == std::string::npos && outcome != "no answer";
  };
  tidings::proto::ReadRequest read;
  read.set_tenant("default");
  read.set_stream(g.stream);
  read.set_max_events(10);
  CHECK(refused(caf::make_message(cluster::nodes_atom::value)));
  CHECK(refused(caf::make_message(cluster::read_atom::value, read.SerializeAsString())));
  // A join that answers no hello, and one with a proof made without the secret.
  CHECK(refused(
      caf::make_message(cluster::join_atom::value, caf::actor_cast<caf::actor>(self), std::string())));
  std::string hello;
  auto nonce = cluster::make_nonce();
  self->request(gate, 5s, cluster::hello_atom::value, nonce)
      .receive([&](const std::string& h) { hello = h; }, [&](caf::error& e) { FAIL(sys.render(e)); });
  tidings::proto::PeerHello h;
  REQUIRE(h.ParseFromString(hello));
  tidings::proto::PeerJoin j;
  j.set_nonce(h.nonce());
  j.set_target_id(h.member_id());
  j.set_caf_node(to_string(sys.node()));
  j.set_proof(std::string(32, 'p'));
  CHECK(refused(caf::make_message(cluster::join_atom::value, caf::actor_cast<caf::actor>(self),
                                  j.SerializeAsString())));
  CHECK(g.cluster.process(0).await_log("\"event\":\"cluster.peer_refused\"", 5s));
  // The members carry on.
  g.cluster.await_converged(10s);
}
