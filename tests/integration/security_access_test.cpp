// Two tenants on one node: tokens, grants and tenant isolation through the
// real tidingsd (docs/security.md).

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

json body_of(const client::http_response& r) {
  return json::parse(r.body, nullptr, false);
}

client::http_response publish(const client::endpoint& ep, const std::string& token, const std::string& stream,
                              const json& body) {
  return post_json(ep, token, "/v1/streams/" + stream + "/events", body.dump());
}

client::http_response get(const client::endpoint& ep, const std::string& token, const std::string& target) {
  return client::request(ep, "GET", target, {}, bearer(token));
}

}  // namespace

TEST_CASE("another tenant's stream answers exactly like a stream that does not exist", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto acme = node.token(token_spec());
  auto globex = node.token(token_spec().tenant("globex").sub("gus"));
  REQUIRE(publish(ep, acme, "docs", {{"path", "/a"}, {"data", 1}}).status == 201);

  auto theirs = get(ep, globex, "/v1/streams/docs");
  auto missing = get(ep, globex, "/v1/streams/nope");
  CHECK(theirs.status == 404);
  CHECK(missing.status == 404);
  auto same_shape = [](std::string body, const std::string& name) {
    auto at = body.find(name);
    if (at != std::string::npos) body.replace(at, name.size(), "X");
    return body;
  };
  CHECK(same_shape(theirs.body, "docs") == same_shape(missing.body, "nope"));
  CHECK(get(ep, globex, "/v1/streams/docs/events").status == 404);
  auto list = body_of(get(ep, globex, "/v1/streams"));
  CHECK(list["streams"].empty());

  // Publishing under the same name makes globex's own stream, apart from acme's.
  REQUIRE(publish(ep, globex, "docs", {{"path", "/g"}, {"data", 2}}).status == 201);
  auto acme_events = body_of(get(ep, acme, "/v1/streams/docs/events"))["events"];
  REQUIRE(acme_events.size() == 1);
  CHECK(acme_events[0]["path"] == "/a");
  auto globex_events = body_of(get(ep, globex, "/v1/streams/docs/events"))["events"];
  REQUIRE(globex_events.size() == 1);
  CHECK(globex_events[0]["path"] == "/g");

  // An SSE session of globex on "docs" sees only globex's events.
  client::sse_stream session(
      ep, "/v1/sse?stream=docs&since=" + client::url_encode(globex_events[0]["cursor"]), bearer(globex));
  await_hello(session);
  REQUIRE(publish(ep, acme, "docs", {{"path", "/a2"}, {"data", 3}}).status == 201);
  REQUIRE(publish(ep, globex, "docs", {{"path", "/g2"}, {"data", 4}}).status == 201);
  auto got = collect_data_events(session, 1, 5s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].path == "/g2");
}

TEST_CASE("a prefix-scoped read grant sees only its paths, live and in history", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto writer = node.token(token_spec());
  auto reader = node.token(token_spec().sub("rita").read({"docs:/a/**"}).write({}));

  client::sse_stream session(ep, "/v1/sse?stream=docs", bearer(reader));
  await_hello(session);
  for (const char* path : {"/a/1", "/b/1", "/a/x/2", "/ab"})
    REQUIRE(publish(ep, writer, "docs", {{"path", path}, {"data", path}}).status == 201);
  REQUIRE(publish(ep, writer, "docs", {{"path", "/a/3"}, {"data", "last"}}).status == 201);
  auto got = collect_data_events(session, 3, 5s);
  REQUIRE(got.events.size() == 3);
  CHECK(got.events[0].path == "/a/1");
  CHECK(got.events[1].path == "/a/x/2");
  CHECK(got.events[2].path == "/a/3");

  auto history = body_of(get(ep, reader, "/v1/streams/docs/events"))["events"];
  REQUIRE(history.size() == 3);
  for (const auto& e : history) CHECK(e["path"].get<std::string>().rfind("/a/", 0) == 0);

  // A prefix outside the grant, or another stream, is refused outright.
  client::sse_stream outside(ep, "/v1/sse?stream=docs:/b", bearer(reader));
  CHECK(outside.status() == 403);
  CHECK(get(ep, reader, "/v1/streams/docs/events?prefix=/b").status == 403);
  CHECK(get(ep, reader, "/v1/streams/other/events").status == 403);
}

TEST_CASE("a write grant is enforced per event path", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto scoped = node.token(token_spec().sub("wes").read({"*"}).write({"docs:/a/*"}));
  CHECK(publish(ep, scoped, "docs", {{"path", "/a/1"}, {"data", 1}}).status == 201);
  auto denied = publish(ep, scoped, "docs", {{"path", "/b/1"}, {"data", 1}});
  CHECK(denied.status == 403);
  CHECK(error_of(denied).find("/b/1") != std::string::npos);
  // One path outside the grant refuses the whole batch: nothing is stored.
  auto batch = json::array({{{"path", "/a/2"}, {"data", 2}}, {{"path", "/a/2/deep"}, {"data", 3}}});
  CHECK(publish(ep, scoped, "docs", batch).status == 403);
  CHECK(publish(ep, scoped, "other", {{"path", "/a/1"}, {"data", 1}}).status == 403);
  auto events = body_of(get(ep, scoped, "/v1/streams/docs/events"))["events"];
  CHECK(events.size() == 1);
  auto reader = node.token(token_spec().sub("ro").write({}));
  CHECK(publish(ep, reader, "docs", {{"path", "/a/1"}}).status == 403);
}

TEST_CASE("every bad token gets a 401 that says what is wrong", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto good = tenant_node::payload(token_spec());
  auto check = [&](const std::string& token, const std::string& words) {
    auto r = get(ep, token, "/v1/streams");
    INFO(words << " -> " << r.body);
    CHECK(r.status == 401);
    CHECK(error_of(r).find(words) != std::string::npos);
    CHECK(r.body.find(node.acme_secret()) == std::string::npos);
  };
  auto none = client::request(ep, "GET", "/v1/streams");
  CHECK(none.status == 401);
  CHECK(error_of(none).find("missing token") != std::string::npos);
  check("not-a-token", "not a JWS");
  check(mint_unsigned({{"alg", "none"}, {"typ", "JWT"}}, good), "alg none");
  check(mint_unsigned({{"alg", "HS256"}, {"kid", "k9"}}, good, "c2ln"), "unknown kid");
  check(mint(broker::key_alg::hs256, "some-other-secret-that-is-long-enough-000", good, "k1"), "signature");
  check(node.token(token_spec().ttl_s(-10)), "expired");
  auto early = tenant_node::payload(token_spec().extra({{"nbf", good["iat"].get<long long>() + 3600}}));
  check(mint(broker::key_alg::hs256, node.acme_secret(), early, "k1"), "not yet valid");
  for (const char* claim : {"exp", "sub", "tenant"}) {
    auto p = good;
    p.erase(claim);
    check(mint(broker::key_alg::hs256, node.acme_secret(), p, "k1"), claim);
  }
  // A token of acme that claims globex verifies with no globex key; a tenant
  // that does not exist gets the same words as one that does.
  auto forged = tenant_node::payload(token_spec().tenant("globex"));
  check(mint(broker::key_alg::hs256, node.acme_secret(), forged, "k1"), "signature does not verify");
  check(mint(broker::key_alg::hs256, node.acme_secret(), forged), "signature does not verify");
  auto nobody = tenant_node::payload(token_spec().tenant("nosuch"));
  check(mint(broker::key_alg::hs256, node.acme_secret(), nobody, "k1"), "signature does not verify");
  check(mint(broker::key_alg::hs256, node.acme_secret(), nobody), "signature does not verify");
  check(mint(broker::key_alg::hs256, node.acme_secret(), nobody, "k-nowhere"), "unknown kid");
  // The other ways a browser can carry a token; the query string only
  // where EventSource needs it (issue 28).
  auto token = node.token(token_spec());
  CHECK(client::request(ep, "GET", "/v1/streams?access_token=" + token).status == 401);
  CHECK(client::request(ep, "GET", "/v1/streams", {}, {{"Cookie", "theme=dark; tidings_token=" + token}})
            .status == 200);
  CHECK(get(ep, node.token_rs256(token_spec()), "/v1/streams").status == 200);
  CHECK(get(ep, node.token(token_spec().tenant("globex")), "/v1/streams").status == 200);
  // Liveness needs no token; admin routes need the admin grant.
  CHECK(client::request(ep, "GET", "/healthz").status == 200);
  CHECK(client::request(ep, "POST", "/admin/v1/reload", {}, bearer(token)).status == 403);
}

TEST_CASE("browsers: only the tenant's origins get CORS answers", "[security]") {
  tenant_node node("    allowed_origins: [\"https://app.example\"]\n");
  auto ep = node.endpoint();
  auto token = node.token(token_spec());
  auto allowed = client::request(ep, "GET", "/v1/streams", {},
                                 {{"Authorization", "Bearer " + token}, {"Origin", "https://app.example"}});
  CHECK(allowed.status == 200);
  CHECK(allowed.headers["access-control-allow-origin"] == "https://app.example");
  auto other = client::request(ep, "GET", "/v1/streams", {},
                               {{"Authorization", "Bearer " + token}, {"Origin", "https://evil.example"}});
  CHECK(other.status == 403);
  auto globex = client::request(ep, "GET", "/v1/streams", {},
                                {{"Authorization", "Bearer " + node.token(token_spec().tenant("globex"))},
                                 {"Origin", "https://app.example"}});
  CHECK(globex.status == 403);
  auto preflight =
      client::request(ep, "OPTIONS", "/v1/streams/docs/events", {},
                      {{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "POST"}});
  CHECK(preflight.status == 204);
  CHECK(preflight.headers["access-control-allow-headers"].find("Authorization") != std::string::npos);
  client::sse_stream session(ep, "/v1/sse?stream=docs&access_token=" + token,
                             {{"Origin", "https://app.example"}});
  await_hello(session);
}

TEST_CASE("a watch reads only what its creator may read in full", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto intern = node.token(token_spec().sub("ivy").read({"docs:/public/**", "watch:iw"}).write({"watch:iw"}));
  auto start = [&](const std::string& token, const json& body) {
    return post_json(ep, token, "/v1/watches", body.dump());
  };
  // The whole stream, a prefix the grant only overlaps, or a filter (whose
  // read_resource reaches every stream) are refused.
  CHECK(start(intern, {{"name", "iw"}, {"uri", "stream://docs"}}).status == 403);
  CHECK(start(intern, {{"name", "iw"}, {"uri", "stream://docs/pub"}}).status == 403);
  auto filtered =
      start(intern, {{"name", "iw"}, {"uri", "stream://docs/public/"}, {"on_event", "return event.path"}});
  CHECK(filtered.status == 403);
  CHECK(error_of(filtered).find("read grant on *") != std::string::npos);
  CHECK(start(intern, {{"name", "iw"}, {"uri", "stream://docs/public/"}}).status == 201);
  CHECK(start(intern, {{"name", "other"}, {"uri", "stream://docs/public/"}}).status == 403);
  CHECK(start(node.token(token_spec()),
              {{"name", "all"}, {"uri", "stream://docs"}, {"on_event", "return event.path"}})
            .status == 201);
}
