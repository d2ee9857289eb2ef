// Issue 28's cross-site requests, as curl sends them (tests/e2e/cross_site
// runs the same attacks from real Chromium pages): the Origin and
// Sec-Fetch-Site checks on state-changing requests, with and without
// tenants, and the Host check that stops DNS rebinding on loopback.

#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/tenant_node.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

std::size_t stored(const client::endpoint& ep, const std::string& stream) {
  auto r = client::request(ep, "GET", events_target(stream));
  return r.status == 200 ? json::parse(r.body)["events"].size() : 0;
}

client::http_response post_event(const client::endpoint& ep, const std::string& stream,
                                 client::header_list headers) {
  headers.emplace_back("Content-Type", "application/json");
  return client::request(ep, "POST", events_target(stream), R"({"path":"/x"})", headers);
}

}  // namespace

TEST_CASE("without tenants only the node's own and the listed origins may change state", "[cross-site]") {
  temp_dir dir;
  tidingsd_process node(dir.path(),
                        {"--allowed-origins", "http://localhost:3000", "--allowed-hosts", "tidings.test"});
  auto ep = node.endpoint();
  const auto own = "http://127.0.0.1:" + std::to_string(ep.port);

  auto evil = post_event(ep, "x", {{"Origin", "http://evil.example"}});
  CHECK(evil.status == 403);
  CHECK(evil.body.find("origin 'http://evil.example' is not allowed") != std::string::npos);
  // Another port of this host is another origin (and "same-site" to a browser).
  CHECK(post_event(ep, "x", {{"Origin", "http://127.0.0.1:1"}}).status == 403);
  // A browser's form or beacon without an Origin, marked by the browser.
  auto marked = post_event(ep, "x", {{"Sec-Fetch-Site", "cross-site"}});
  CHECK(marked.status == 403);
  CHECK(marked.body.find("Sec-Fetch-Site: cross-site") != std::string::npos);
  CHECK(post_event(ep, "x", {{"Sec-Fetch-Site", "same-site"}}).status == 403);
  auto drain = client::request(ep, "POST", "/admin/v1/drain", "{}",
                               {{"Origin", "http://evil.example"}, {"Content-Type", "application/json"}});
  CHECK(drain.status == 403);
  auto watch = client::request(ep, "POST", "/v1/watches", R"({"name":"w","uri":"stream://x"})",
                               {{"Origin", "http://evil.example"}, {"Content-Type", "application/json"}});
  CHECK(watch.status == 403);
  CHECK(stored(ep, "x") == 0);

  // The node's own pages, the listed origin (with CORS headers), and
  // clients that are not browsers.
  CHECK(post_event(ep, "x", {{"Origin", own}}).status == 201);
  auto friendly = post_event(ep, "x", {{"Origin", "http://localhost:3000"}});
  CHECK(friendly.status == 201);
  CHECK(friendly.headers["access-control-allow-origin"] == "http://localhost:3000");
  CHECK(post_event(ep, "x", {{"Sec-Fetch-Site", "same-origin"}}).status == 201);
  CHECK(post_event(ep, "x", {}).status == 201);
  CHECK(stored(ep, "x") == 4);

  auto preflight = [&](const std::string& origin) {
    return client::request(ep, "OPTIONS", events_target("x"), {},
                           {{"Origin", origin}, {"Access-Control-Request-Method", "POST"}})
        .status;
  };
  CHECK(preflight("http://localhost:3000") == 204);
  CHECK(preflight("http://evil.example") == 403);
  CHECK(client::request(ep, "GET", "/healthz").status == 200);  // still up
}

TEST_CASE("on loopback a Host that is not the node's name is refused on every route", "[cross-site]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--allowed-hosts", "tidings.test"});
  auto ep = node.endpoint();
  auto with_host = [&](const std::string& method, const std::string& target, const std::string& host) {
    auto raw = method + " " + target + " HTTP/1.1\r\nHost: " + host +
               "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    auto reply = client::raw_exchange(ep, raw, 5s);
    return reply.substr(9, 3);
  };
  const auto port = std::to_string(ep.port);
  // A name the attacker's DNS gave 127.0.0.1: the browser thinks the page
  // and the node are one origin, so only the Host tells.
  CHECK(with_host("POST", events_target("r"), "rebound.example:" + port) == "403");
  CHECK(with_host("GET", "/v1/streams", "rebound.example:" + port) == "403");
  CHECK(with_host("GET", "/live/", "rebound.example") == "403");
  CHECK(with_host("GET", "/healthz", "127.0.0.1.rebound.example") == "403");
  CHECK(stored(ep, "r") == 0);
  for (auto host : {"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "tidings.test:" + port}) {
    INFO(host);
    CHECK(with_host("GET", "/v1/streams", host) == "200");
  }
}

TEST_CASE("with tenants a cookie's request from another site changes nothing", "[cross-site]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto token = node.token(token_spec().sub("ann").read({"docs"}).write({"docs"}));
  const client::header_list cookie{{"Cookie", "tidings_token=" + token},
                                   {"Content-Type", "application/json"}};
  auto post = [&](client::header_list extra) {
    auto h = cookie;
    for (auto& e : extra) h.push_back(e);
    return client::request(ep, "POST", events_target("docs"), R"({"path":"/a"})", h);
  };
  CHECK(post({{"Sec-Fetch-Site", "cross-site"}}).status == 403);
  CHECK(post({{"Origin", "http://evil.example"}}).status == 403);
  CHECK(post({{"Sec-Fetch-Site", "same-origin"}}).status == 201);
  CHECK(post({}).status == 201);  // not a browser
}
