// nats_topic through the real tidingsd against a real nats-server (issue
// 24, seeds/001): any message on the subject is a change (each one an
// event), other subjects are none, a server that goes away is reported and,
// once back, a GAP says what may have been missed; a server that cannot be
// reached fails the subscription with the reason.

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/metrics_scrape.hpp"
#include "tests/support/nats_server.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The source of `uri` as GET /v1/sources lists it (null when there is none).
json source_of(const client::endpoint& ep, const std::string& uri) {
  for (const auto& s : json::parse(client::request(ep, "GET", "/v1/sources").body))
    if (s["uri"] == uri) return s;
  return nullptr;
}

}  // namespace

TEST_CASE(
    "nats_topic through tidingsd: each message on the subject is an event, and a lost server heals with "
    "a GAP",
    "[sources][nats]") {
  nats_server nats;
  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n"
                        "  resources:\n"
                        "    - uri: bus://inventory\n"
                        "      watch: {strategy: {type: nats_topic, url: \""
                     << nats.url()
                     << "\", subject: \"inventory.*\", timeout_ms: 2000}}\n"
                        "    - uri: bus://nowhere\n"
                        "      watch: {strategy: {type: nats_topic, url: \"nats://127.0.0.1:1\", subject: x, "
                        "timeout_ms: 500}}\n";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string(), "--source-backoff-ms", "50"});
  auto ep = node.endpoint();

  client::sse_stream session(ep, "/v1/sse?uri=" + client::url_encode("bus://inventory"));
  await_hello(session);
  // Subscribed upstream (the server answered its PING) before anything is sent.
  REQUIRE(poll_until(10s, [&] { return source_of(ep, "bus://inventory").value("state", "") == "running"; }));

  // Another subject first: were it a change, its event would come first.
  nats.publish("orders.eu", "{}");
  nats.publish("inventory.eu", R"({"sku":"a-1"})");
  nats.publish("inventory.us", "not even JSON");
  auto got = collect_data_events(session, 2, 10s);
  REQUIRE(got.events.size() == 2);
  CHECK(got.events[0].type == "CHANGED");
  CHECK(got.events[1].type == "CHANGED");
  CHECK(got.events[0].cursor != got.events[1].cursor);

  // The server goes away: the source says so, keeps its session, and when
  // the server is back a GAP says messages may have been missed.
  nats.stop();
  REQUIRE(node.await_log("\"event\":\"source.nats_disconnected\"", 10s));
  nats.start();
  auto gap = collect_data_events(session, 1, 20s);
  REQUIRE(gap.events.size() == 1);
  CHECK(gap.events[0].type == "GAP");
  CHECK(gap.events[0].data.dump().find("messages published while disconnected are lost") !=
        std::string::npos);
  nats.publish("inventory.eu", "{}");
  auto after = collect_data_events(session, 1, 10s);
  REQUIRE(after.events.size() == 1);
  CHECK(after.events[0].type == "CHANGED");

  // A server that cannot be reached fails the subscription, with the reason.
  auto nowhere =
      client::request(ep, "GET", "/v1/sse?uri=" + client::url_encode("bus://nowhere"), "", {}, 10s);
  INFO(nowhere.body);
  CHECK(nowhere.status == 502);
  CHECK(nowhere.body.find("bus://nowhere: cannot connect to nats://127.0.0.1:1: No server available for "
                          "connection") != std::string::npos);
  CHECK(nowhere.body.find("conn.c") == std::string::npos);
}

TEST_CASE(
    "nats_topic over TLS: verified against the CA file and the host name, refused otherwise, naming why",
    "[sources][nats][tls]") {
  temp_dir dir;
  test_ca ca(dir.path().string(), "nats");
  auto leaf = ca.issue("localhost", {"localhost", {"DNS:localhost"}});
  nats_server nats(nats_server::tls_files{leaf.cert, leaf.key, ca.files().cert});
  const auto port = std::to_string(nats.port());
  auto cfg = dir.path() / "tidings.yaml";
  auto resource = [&](const std::string& uri, const std::string& url, const std::string& extra) {
    return "    - uri: " + uri + "\n      watch: {strategy: {type: nats_topic, url: \"" + url +
           "\", subject: stock, timeout_ms: 2000" + extra + "}}\n";
  };
  std::ofstream(cfg) << "upstreams:\n  resources:\n"
                     << resource("bus://tls", nats.url(), ", ca_file: \"" + ca.files().cert + "\"")
                     << resource("bus://unknown-ca", nats.url(), "")
                     << resource("bus://other-name", "tls://127.0.0.1:" + port,
                                 ", ca_file: \"" + ca.files().cert + "\"")
                     << resource("bus://plain", "nats://localhost:" + port, "");
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string(), "--source-backoff-ms", "50"});
  auto ep = node.endpoint();

  client::sse_stream session(ep, uri_target("bus://tls"));
  await_hello(session);
  REQUIRE(poll_until(10s, [&] { return source_of(ep, "bus://tls").value("state", "") == "running"; }));
  nats.publish("stock", "{}");
  auto got = collect_data_events(session, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].type == "CHANGED");

  // Each refused at subscribe, the reason in the answer.
  for (const auto& [uri, reason] : std::vector<std::pair<std::string, std::string>>{
           {"bus://unknown-ca",
            ": TLS handshake failed: unknown CA (unable to get local issuer certificate)"},
           {"bus://other-name", ": TLS handshake failed: name mismatch (IP address mismatch)"},
           {"bus://plain", "cannot connect to nats://localhost:" + port}}) {
    auto refused = client::request(ep, "GET", uri_target(uri), "", {}, 10s);
    INFO(uri << ": " << refused.body);
    CHECK(refused.status == 502);
    CHECK(refused.body.find(uri + ": cannot connect to ") != std::string::npos);
    CHECK(refused.body.find(reason) != std::string::npos);
  }
  // Counted by server and kind, as the HTTP upstreams' are.
  auto m = scrape_metrics(ep);
  CHECK(m.value_or_zero("tidings_upstream_tls_failures_total",
                        {{"upstream", "localhost:" + port}, {"kind", "unknown CA"}}) >= 1);
  CHECK(m.value_or_zero("tidings_upstream_tls_failures_total",
                        {{"upstream", "127.0.0.1:" + port}, {"kind", "name mismatch"}}) >= 1);
}
