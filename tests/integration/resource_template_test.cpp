// watch: blocks on resource templates (issue 24, seeds/001) through the
// real tidingsd: a poll template whose backend URL, body and header take
// each URI's variables (one source, one backend URL per URI), and a webhook
// template whose token names its resource with ?uri=. Backends are a local
// HTTP server; sql_polling's parameters are tested against PostgreSQL in
// sql_polling_test.cpp.

#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/fake_backend.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

client::http_response post(const client::endpoint& ep, const std::string& target) {
  return client::request(ep, "POST", target, "", {});
}

}  // namespace

TEST_CASE("resource templates: each URI polled with its variables, a template's webhook names its URI",
          "[sources][poll][webhook]") {
  fake_backend backend;
  backend.set(200, R"({"v":1})");
  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << R"(
upstreams:
  poll_floor_ms: 200
  resources:
    - uri_template: "drive://file/{id}"
      name: drive.file
      description: "A file. Example: drive://file/abc"
      backend:
        url: ")" << backend.url("/files/{id}?fields=md5")
                     << R"("
        method: POST
        body: '{"file": "{id}"}'
        headers: {X-File: "{id}"}
      watch: {strategy: {type: poll, interval_ms: 200}}
    - uri: hook://orders/vip
      watch: {strategy: {type: webhook, token: vip-token-0123456789}}
    - uri_template: "hook://orders/{order}"
      watch: {strategy: {type: webhook, token: order-token-0123456789}}
)";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();

  auto resources = client::request(ep, "GET", "/v1/resources");
  REQUIRE(resources.status == 200);
  auto listed = json::parse(resources.body);
  REQUIRE(listed.size() == 3);
  CHECK(listed[0]["uri"] == "drive://file/{id}");
  CHECK(listed[0]["template"] == true);
  CHECK(listed[0]["example"] == "drive://file/abc");

  // Two URIs of one template: two sources, each fetching its own URL; the
  // value lands percent-encoded in the URL, JSON-escaped in the body.
  client::sse_stream a(ep, uri_target("drive://file/a%22b"));
  await_hello(a);
  CHECK(backend.last_body() == R"({"file": "a\"b"})");
  CHECK(backend.last_header("X-File") == "a\"b");
  client::sse_stream c(ep, uri_target("drive://file/c"));
  await_hello(c);
  auto targets = backend.targets();
  CHECK(std::find(targets.begin(), targets.end(), "/files/a%22b?fields=md5") != targets.end());
  CHECK(std::find(targets.begin(), targets.end(), "/files/c?fields=md5") != targets.end());
  auto sources = json::parse(client::request(ep, "GET", "/v1/sources").body);
  CHECK(sources.size() == 2);

  backend.set(200, R"({"v":2})");
  for (auto [session, uri] : {std::pair{&a, "drive://file/a%22b"}, std::pair{&c, "drive://file/c"}}) {
    auto got = collect_data_events(*session, 1, 10s);
    REQUIRE(got.events.size() == 1);
    CHECK(got.events[0].data["new"] == 2);
    CHECK(got.events[0].data["uri"] == uri);
  }

  // The webhook template: one token, the URI in ?uri=.
  const std::string hook = "/webhooks/resource-updated/order-token-0123456789";
  auto unnamed = post(ep, hook);
  CHECK(unnamed.status == 400);
  CHECK(json::parse(unnamed.body)["error"] ==
        "this token is resource template hook://orders/{order}'s: name the resource with ?uri=");
  auto foreign = post(ep, hook + "?uri=" + client::url_encode("hook://other/1"));
  CHECK(foreign.status == 400);
  CHECK(json::parse(foreign.body)["error"] ==
        "?uri=hook://other/1 is not a URI of resource template hook://orders/{order}");
  // An exact resource the template also matches keeps its own token.
  auto vip = post(ep, hook + "?uri=" + client::url_encode("hook://orders/vip"));
  CHECK(vip.status == 400);
  client::sse_stream nine(ep, uri_target("hook://orders/9"));
  await_hello(nine);
  client::sse_stream ten(ep, uri_target("hook://orders/10"));
  await_hello(ten);
  // The URI named fires its own source only.
  auto events_of = [&](const std::string& uri) {
    for (const auto& s : json::parse(client::request(ep, "GET", "/v1/sources").body))
      if (s["uri"] == uri) return s["events"].get<int>();
    return -1;
  };
  auto fired = post(ep, hook + "?uri=" + client::url_encode("hook://orders/9"));
  CHECK(fired.status == 200);
  CHECK(json::parse(fired.body) == json{{"ok", true}, {"uri", "hook://orders/9"}});
  auto got = collect_data_events(nine, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].type == "CHANGED");
  CHECK(got.events[0].data["uri"] == "hook://orders/9");
  CHECK(events_of("hook://orders/10") == 0);
  REQUIRE(post(ep, hook + "?uri=" + client::url_encode("hook://orders/10")).status == 200);
  got = collect_data_events(ten, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].data["uri"] == "hook://orders/10");
  CHECK(events_of("hook://orders/9") == 1);
}
