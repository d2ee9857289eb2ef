// broker/site_guard.hpp: the Host check against DNS rebinding, the
// Sec-Fetch-Site check for state-changing requests without an Origin, and
// the origins allowed without tenants (issue 28).

#include "broker/site_guard.hpp"

#include <catch2/catch.hpp>

using namespace tidings::broker;

namespace {

http_request request(std::string method, std::map<std::string, std::string> headers) {
  http_request r;
  r.method = std::move(method);
  r.path = "/v1/streams/s/events";
  r.headers = std::move(headers);
  return r;
}

}  // namespace

TEST_CASE("the host part of a Host header", "[site]") {
  CHECK(host_name_of("127.0.0.1:8080") == "127.0.0.1");
  CHECK(host_name_of("LocalHost") == "localhost");
  CHECK(host_name_of("localhost.:80") == "localhost");
  CHECK(host_name_of("[::1]:8080") == "::1");
  CHECK(host_name_of("[::1]") == "::1");
  CHECK(host_name_of("[::1]x").empty());
  CHECK(host_name_of("[::1").empty());
}

TEST_CASE("on loopback a Host must name loopback or a listed name", "[site]") {
  site_policy p;
  p.hosts = {"tidings.internal"};
  for (auto ok : {"127.0.0.1:8080", "127.1.2.3", "localhost:1", "app.localhost:9", "[::1]:8080",
                  "tidings.internal", "TIDINGS.internal:8080"}) {
    INFO(ok);
    CHECK_FALSE(host_refusal(request("GET", {{"host", ok}}), p));
  }
  for (auto bad : {"evil.example:8080", "127.0.0.1.evil.example", "128.0.0.1", "localhost.evil", "", "[::2]",
                   "tidings.internal.evil"}) {
    INFO(bad);
    auto why = host_refusal(request("GET", {{"host", bad}}), p);
    REQUIRE(why);
    CHECK(why->find("not a name of this node") != std::string::npos);
  }
  // No Host at all (HTTP/1.0) is not a browser's request.
  CHECK_FALSE(host_refusal(request("GET", {}), p));
  // Listening beyond loopback (tenants) leaves names to the network.
  p.loopback_only = false;
  CHECK_FALSE(host_refusal(request("GET", {{"host", "evil.example"}}), p));
}

TEST_CASE("a state-changing request marked cross-site or same-site without an Origin", "[site]") {
  CHECK(cross_site_without_origin(request("POST", {{"sec-fetch-site", "cross-site"}})));
  CHECK(cross_site_without_origin(request("DELETE", {{"sec-fetch-site", "same-site"}})));
  CHECK_FALSE(cross_site_without_origin(request("POST", {{"sec-fetch-site", "same-origin"}})));
  CHECK_FALSE(cross_site_without_origin(request("POST", {{"sec-fetch-site", "none"}})));
  CHECK_FALSE(cross_site_without_origin(request("POST", {})));  // curl, servers
  CHECK_FALSE(cross_site_without_origin(request("GET", {{"sec-fetch-site", "cross-site"}})));  // a link
  // With an Origin, the Origin is judged instead.
  CHECK_FALSE(cross_site_without_origin(
      request("POST", {{"sec-fetch-site", "cross-site"}, {"origin", "http://evil.example"}})));
}

TEST_CASE("without tenants the node's own origin and the listed ones are allowed", "[site]") {
  site_policy p;
  p.origins = {"http://localhost:3000"};
  auto req = request("POST", {{"host", "127.0.0.1:8080"}});
  CHECK(anonymous_origin_allowed(req, "http://127.0.0.1:8080", p));
  CHECK(anonymous_origin_allowed(req, "https://127.0.0.1:8080", p));  // behind a local TLS proxy
  CHECK(anonymous_origin_allowed(req, "HTTP://LOCALHOST:3000", p));
  CHECK_FALSE(anonymous_origin_allowed(req, "http://127.0.0.1:8081", p));  // another port: another origin
  CHECK_FALSE(anonymous_origin_allowed(req, "http://localhost:8080", p));
  CHECK_FALSE(anonymous_origin_allowed(req, "null", p));  // a sandboxed frame or a file: page
  CHECK_FALSE(anonymous_origin_allowed(request("POST", {}), "http://127.0.0.1:8080", p));
}
