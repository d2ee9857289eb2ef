// HTTPS upstreams through the real tidingsd (issue 24): a poll resource
// whose backend serves TLS, verified against its ca_file, refused without
// it (the read's error names the upstream and why, /metrics counts it), and one whose
// insecure_skip_verify is written: warned at start and shown in
// /v1/sources. The backend is a TLS server of the test's own with
// certificates made for the test.

#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/metrics_scrape.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/tls_loopback_server.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

client::http_response read_resource(const client::endpoint& ep, const std::string& uri) {
  return client::request(ep, "GET", "/v1/resources/read?uri=" + client::url_encode(uri));
}

const json* source_for(const json& sources, const std::string& uri) {
  for (const auto& s : sources)
    if (s["uri"] == uri) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE(
    "https backends: verified by their ca_file, refused without it naming why, unverified only when written",
    "[sources][tls]") {
  temp_dir dir;
  test_ca ca(dir.path().string(), "backend");
  const auto leaf = ca.issue("backend", {"localhost", {"DNS:localhost", "IP:127.0.0.1"}});
  std::atomic<int> version{1};
  tls_loopback_server backend(leaf, [&](tls_socket& s) {
    if (read_http_request(s).empty()) return;
    const std::string body = "report v" + std::to_string(version.load());
    write_all(s, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  const auto port = std::to_string(backend.port());
  const auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n"
                        "  poll_floor_ms: 100\n"
                        "  resources:\n"
                        "    - uri: drive://verified\n"
                        "      backend: {url: \"https://localhost:"
                     << port << "/r\", ca_file: " << ca.files().cert
                     << "}\n"
                        "      watch: {strategy: {type: poll, interval_ms: 100}}\n"
                        "    - uri: drive://untrusted\n"
                        "      backend: {url: \"https://localhost:"
                     << port
                     << "/r\"}\n"
                        "      watch: {strategy: {type: poll, interval_ms: 100}}\n"
                        "    - uri: drive://unverified\n"
                        "      backend: {url: \"https://127.0.0.1:"
                     << port
                     << "/r\", insecure_skip_verify: true}\n"
                        "      watch: {strategy: {type: poll, interval_ms: 100}}\n";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  const auto ep = node.endpoint();
  REQUIRE(node.await_log("\"source.tls_unverified\"", 5s));
  CHECK(node.log().find("upstreams.resources[2].backend.insecure_skip_verify") != std::string::npos);

  // The system store does not know the test's CA.
  const auto untrusted = read_resource(ep, "drive://untrusted");
  CHECK(untrusted.status == 502);
  CHECK(json::parse(untrusted.body)["error"].get<std::string>().find(
            "TLS handshake with localhost:" + port + " failed: unknown CA (") != std::string::npos);
  // Counted by upstream and kind.
  CHECK(scrape_metrics(ep).value_or_zero("tidings_upstream_tls_failures_total",
                                         {{"upstream", "localhost:" + port}, {"kind", "unknown CA"}}) >= 1);
  const auto verified = read_resource(ep, "drive://verified");
  REQUIRE(verified.status == 200);
  CHECK(json::parse(verified.body) == "report v1");

  client::sse_stream session(ep, "/v1/sse?uri=" + client::url_encode("drive://verified"));
  await_hello(session);
  client::sse_stream lax(ep, "/v1/sse?uri=" + client::url_encode("drive://unverified"));
  await_hello(lax);
  version = 2;
  const auto got = collect_data_events(session, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].type == "CHANGED");
  CHECK(got.events[0].data["old"] == "report v1");
  CHECK(got.events[0].data["new"] == "report v2");

  const auto r = client::request(ep, "GET", "/v1/sources");
  REQUIRE(r.status == 200);
  const auto sources = json::parse(r.body);
  const auto* checked = source_for(sources, "drive://verified");
  const auto* unchecked = source_for(sources, "drive://unverified");
  REQUIRE(checked);
  REQUIRE(unchecked);
  CHECK_FALSE(checked->contains("tls"));
  CHECK((*unchecked)["tls"] == "unverified (insecure_skip_verify)");
}
