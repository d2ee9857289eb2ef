// Issue 24, mutual TLS between nodes (ADR 0032): three members, each with its
// own certificate of the cluster CA, serve a stream across the cluster over
// CAF's OpenSSL module, and nothing without a certificate of that CA gets
// a connection: not a tidingsd that holds the secret but a certificate of
// another CA, not a CAF process speaking plain BASP, not one speaking TLS
// with another CA's certificate. A CAF process with a certificate of the
// cluster's CA does connect (so the refusals above are the certificates'),
// and still meets only the gate (rogue_member_test.cpp).

#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "client/http_client.hpp"
#include "cluster/atoms.hpp"
#include "cluster/cluster_secret.hpp"
#include "cluster/node_certificate.hpp"
#include "cluster/peer_gate.hpp"
#include "proto/cluster.pb.h"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

leaf_spec node_spec(const std::string& name) {
  leaf_spec s{name, {"DNS:" + name}};
  s.usage = usage::server_and_client;
  return s;
}

// Connects a CAF process to `port` (through the OpenSSL module when it has
// one) and says how that went: "connected" or CAF's error.
std::string connect(caf::actor_system& sys, std::uint16_t port, bool tls) {
  caf::scoped_actor self{sys};
  auto mm = tls ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  std::string outcome = "no answer";
  self->request(mm, 5s, caf::connect_atom::value, std::string("127.0.0.1"), port)
      .receive([&](const caf::node_id&, caf::strong_actor_ptr& gate,
                   const std::set<std::string>&) { outcome = gate ? "connected" : "connected to nothing"; },
               [&](caf::error& e) { outcome = sys.render(e); });
  return outcome;
}

// A CAF process with TLS and `files` as its certificate, trusting `ca`.
std::string connect_with(const pem_files& files, const std::string& ca, std::uint16_t port) {
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  cfg.openssl_cafile = ca;
  cfg.openssl_certificate = files.cert;
  cfg.openssl_key = files.key;
  cfg.load<caf::openssl::manager>();
  caf::actor_system sys{cfg};
  return connect(sys, port, true);
}

// Read back through every node. A member's link may drop for a moment
// while the cluster is young (docs/cluster.md, Limits): a read then gets 503
// "try again", and is tried again, as a client would.
void expect_served_by_all(cluster_nodes& cluster, const std::string& stream,
                          const std::vector<std::string>& paths) {
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    client::http_response r;
    poll_until(10s, [&] {
      r = client::request(cluster.endpoint(i), "GET", events_target(stream), "", {}, 10s);
      return r.status != 503;
    });
    INFO("node " << i << ": " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    for (const auto& p : paths) CHECK(r.body.find("\"" + p + "\"") != std::string::npos);
  }
}

// A publish with an Idempotency-Key, sent again with the same key while
// it gets 503 (the contract for "it may have been stored: retry").
void publish_retried(cluster_nodes& cluster, std::size_t node, const std::string& stream,
                     const std::string& event) {
  client::http_response r;
  const std::string key = "tls-" + std::to_string(node) + "-" + stream;
  poll_until(10s, [&] {
    r = client::request(cluster.endpoint(node), "POST", events_target(stream), event,
                        {{"Content-Type", "application/json"}, {"Idempotency-Key", key}}, 10s);
    return r.status != 503;
  });
  INFO(r.status << " " << r.body);
  REQUIRE(r.status / 100 == 2);
}

}  // namespace

TEST_CASE(
    "a 3-node mutual-TLS cluster serves across its nodes, and nothing without a certificate of its CA joins "
    "it or reaches its port",
    "[cluster][security][cluster_tls]") {
  temp_dir certs;
  const auto dir = certs.path().string();
  test_ca ca(dir, "cluster");
  for (int i = 0; i < 3; ++i) ca.issue("node-" + std::to_string(i), node_spec("node-" + std::to_string(i)));
  cluster_nodes cluster(3, {"--cluster-ca", ca.files().cert, "--cluster-cert", dir + "/node-{node}.pem",
                            "--cluster-key", dir + "/node-{node}.key"});
  for (std::size_t i = 0; i < cluster.size(); ++i)
    CHECK(cluster.process(i).log().find("cluster.member_connected") != std::string::npos);
  // Owned by node 1, published through node 0, read through each.
  auto stream = cluster.owned_stream(1, "tls");
  publish_retried(cluster, 0, stream, event_json("/a", "ADDED", json{{"n", 1}}));
  expect_served_by_all(cluster, stream, {"/a"});

  test_ca rogue(dir, "rogue");
  auto odd_files = rogue.issue("odd", node_spec("odd"));

  SECTION("a tidingsd with the secret and a certificate of another CA is refused and serves nothing") {
    temp_dir odd_dir;
    auto args = cluster.member_args(odd_dir.path(), cluster.secret());
    args.insert(args.end(), {"--cluster-ca", rogue.files().cert, "--cluster-cert", odd_files.cert,
                             "--cluster-key", odd_files.key});
    tidingsd_process odd(odd_dir.path() / "data", std::move(args), 20s);
    INFO("outsider's log:\n" << odd.log() << "\nmembers' logs:\n" << cluster.logs());
    REQUIRE(odd.await_log("\"event\":\"cluster.outvoted\"", 10s));
    for (std::size_t i = 0; i < cluster.size(); ++i)
      REQUIRE(cluster.process(i).await_log("\"event\":\"cluster.member_refused\"", 10s));
    CHECK(client::request(odd.endpoint(), "GET", "/readyz", "", {}, 10s).status == 503);
    cluster.await_converged(10s);
    CHECK(odd.log().find("cluster.member_connected") == std::string::npos);
  }
  SECTION("CAF processes: plain BASP and another CA's certificate get no connection; the cluster CA's do") {
    caf::actor_system_config plain_cfg;
    plain_cfg.load<caf::io::middleman>();
    caf::actor_system plain{plain_cfg};
    auto outcome = connect(plain, cluster.cluster_port(0), false);
    INFO("plain: " << outcome);
    CHECK(outcome != "connected");
    outcome = connect_with(odd_files, ca.files().cert, cluster.cluster_port(0));
    INFO("another CA's certificate: " << outcome);
    CHECK(outcome != "connected");
    auto guest = ca.issue("guest", node_spec("guest"));
    CHECK(connect_with(guest, ca.files().cert, cluster.cluster_port(0)) == "connected");
    cluster.await_converged(10s);
  }
  SECTION(
      "a process with the secret and a certificate of the CA cannot join as a member whose key it lacks") {
    auto guest = ca.issue("guest", node_spec("guest"));
    std::string why;
    auto guest_cert = cluster::node_certificate::load(ca.files().cert, guest.cert, guest.key, &why);
    auto gate_cert =
        cluster::node_certificate::load(ca.files().cert, dir + "/node-0.pem", dir + "/node-0.key", &why);
    INFO(why);
    REQUIRE(guest_cert);
    REQUIRE(gate_cert);
    caf::actor_system_config cfg;
    cfg.load<caf::io::middleman>();
    cfg.openssl_cafile = ca.files().cert;
    cfg.openssl_certificate = guest.cert;
    cfg.openssl_key = guest.key;
    cfg.load<caf::openssl::manager>();
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    caf::actor gate;
    self->request(sys.openssl_manager().actor_handle(), 5s, caf::connect_atom::value,
                  std::string("127.0.0.1"), cluster.cluster_port(0))
        .receive([&](const caf::node_id&, caf::strong_actor_ptr& ptr,
                     const std::set<std::string>&) { gate = caf::actor_cast<caf::actor>(ptr); },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    REQUIRE(gate);
    // Member 1's id, with the guest's own certificate (and key to sign with).
    const cluster::cluster_secret secret(cluster.secret());
    proto::Member claimed;
    claimed.set_id(cluster.node_id(1));
    claimed.set_certificate(guest_cert->der());
    cluster::member gate_member;
    gate_member.id = cluster.node_id(0);
    gate_member.certificate = gate_cert->der();
    auto nonce = cluster::make_nonce();
    std::string hello;
    self->request(gate, 5s, cluster::hello_atom::value, nonce)
        .receive([&](const std::string& h) { hello = h; }, [&](caf::error& e) { FAIL(sys.render(e)); });
    auto join =
        cluster::answer_hello({secret, claimed.SerializeAsString(), to_string(sys.node()), guest_cert.get()},
                              nonce, hello, gate_member, to_string(gate->node()), &why);
    INFO(why);
    REQUIRE_FALSE(join.empty());  // the gate proved itself with member 0's key
    std::string outcome = "no answer";
    self->request(gate, 5s, cluster::join_atom::value, caf::actor_cast<caf::actor>(self), join)
        .receive([&](const caf::actor&, const std::string&) { outcome = "joined"; },
                 [&](caf::error& e) { outcome = sys.render(e); });
    INFO(outcome);
    CHECK(outcome.find("join refused: the record lists no member " + cluster.node_id(1) +
                       " with this certificate") != std::string::npos);
    cluster.await_converged(10s);
  }
  // The members go on.
  publish_retried(cluster, 2, stream, event_json("/b", "ADDED", json{{"n", 2}}));
  expect_served_by_all(cluster, stream, {"/a", "/b"});
}
