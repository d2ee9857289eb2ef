// GET /live/...: the live view's embedded files, open without a token on a
// node with tenants, with validators, a CSP, and clear errors; and the page's
// own-origin calls pass the tenant's origin check.

#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/tenant_node.hpp"

namespace {

using namespace tidings;
using namespace tidings::testing;

}  // namespace

TEST_CASE("the live view's files are served to anyone with validators and a CSP", "[live]") {
  tenant_node node;
  auto page = client::request(node.endpoint(), "GET", "/live/");
  REQUIRE(page.status == 200);
  CHECK(page.headers["content-type"] == "text/html; charset=utf-8");
  CHECK(page.body.find("<!doctype html>") != std::string::npos);
  CHECK(page.headers["content-security-policy"].find("script-src 'self'") != std::string::npos);
  CHECK(page.headers["x-content-type-options"] == "nosniff");
  CHECK(page.headers["cache-control"] == "no-cache");
  const auto etag = page.headers["etag"];
  REQUIRE(etag.size() == 34);  // 32 hex digits, quoted

  SECTION("the same file again with its ETag is 304 with no body") {
    auto again = client::request(node.endpoint(), "GET", "/live/", {}, {{"If-None-Match", etag}});
    CHECK(again.status == 304);
    CHECK(again.body.empty());
    auto other = client::request(node.endpoint(), "GET", "/live/", {}, {{"If-None-Match", "\"stale\""}});
    CHECK(other.status == 200);
  }
  SECTION("the client module is JavaScript, its types are plain text") {
    auto js = client::request(node.endpoint(), "GET", "/live/tidings.js");
    REQUIRE(js.status == 200);
    CHECK(js.headers["content-type"] == "text/javascript; charset=utf-8");
    CHECK(js.body.find("export") != std::string::npos);
    auto dts = client::request(node.endpoint(), "GET", "/live/tidings.d.ts");
    REQUIRE(dts.status == 200);
    CHECK(dts.headers["content-type"] == "text/plain; charset=utf-8");
  }
  SECTION("HEAD has GET's headers and no body") {
    auto head = client::request(node.endpoint(), "HEAD", "/live/tidings.js");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
  }
  SECTION("/live redirects to /live/ so relative URLs resolve") {
    auto r = client::request(node.endpoint(), "GET", "/live");
    CHECK(r.status == 308);
    CHECK(r.headers["location"] == "/live/");
  }
  SECTION("a missing file is 404 and another method 405, each with an error") {
    auto missing = client::request(node.endpoint(), "GET", "/live/nope.js");
    CHECK(missing.status == 404);
    CHECK(nlohmann::json::parse(missing.body)["error"].get<std::string>().find("/live/nope.js") !=
          std::string::npos);
    auto post = client::request(node.endpoint(), "POST", "/live/", "{}");
    CHECK(post.status == 405);
    CHECK(post.headers["allow"] == "GET, HEAD");
  }
}

TEST_CASE("a page served by the node may call it from the node's own origin", "[live]") {
  tenant_node node;
  const auto token = node.token(token_spec().sub("ann").read({"docs"}).write({"docs"}));
  const auto own = "http://" + node.endpoint().host + ":" + std::to_string(node.endpoint().port);
  auto post = [&](const std::string& origin, const std::string& site) {
    client::header_list h{
        {"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}, {"Origin", origin}};
    if (!site.empty()) h.emplace_back("Sec-Fetch-Site", site);
    return client::request(node.endpoint(), "POST", "/v1/streams/docs/events", R"({"path":"/a"})", h);
  };
  // What a browser sends for the page's own POST (Origin included).
  CHECK(post(own, "same-origin").status == 201);
  // Another site, as the browser marks it: held to allowed_origins (empty).
  auto elsewhere = post("http://evil.example", "cross-site");
  CHECK(elsewhere.status == 403);
  CHECK(elsewhere.body.find("origin 'http://evil.example' is not allowed") != std::string::npos);
  // An Origin naming the node without the browser's mark proves nothing:
  // another scheme or a proxy's Host could make it look like ours.
  CHECK(post(own, "").status == 403);
  CHECK(post(own, "same-site").status == 403);
}
