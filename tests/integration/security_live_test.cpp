// Live sessions lose their credential: expiry, revocation, reload; and what
// is promised about event content and notification scoping.

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>

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
using clock_type = std::chrono::steady_clock;

client::http_response post(const client::endpoint& ep, const std::string& token, const std::string& target,
                           const json& body) {
  return post_json(ep, token, target, body.dump());
}

// The next non-heartbeat message must be `unauthorized`, within `timeout`.
json await_unauthorized(client::sse_stream& session, std::chrono::milliseconds timeout) {
  auto m = next_non_heartbeat(session, timeout);
  REQUIRE(m);
  INFO(m->event << ": " << m->data);
  REQUIRE(m->event == "unauthorized");
  core::sse_message after;
  CHECK(session.next(after, 2s) == client::sse_stream::result::closed);
  return json::parse(m->data);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("a session ends with unauthorized when its token expires, on a quiet stream", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto token = node.token(token_spec().ttl_s(2));
  client::sse_stream session(ep, "/v1/sse?stream=quiet", bearer(token));
  await_hello(session);
  auto data = await_unauthorized(session, 5s);
  CHECK(data["reason"] == "token expired");
  CHECK(client::request(ep, "GET", "/v1/sse?stream=quiet", {}, bearer(token)).status == 401);
}

TEST_CASE("revocation by jti and by subject ends live sessions within a second and survives restarts",
          "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto admin = node.token(token_spec().sub("root").admin(true).jti("admin-1"));
  auto by_jti = node.token(token_spec().sub("ann").jti("t-ann-1"));
  auto other_of_ann = node.token(token_spec().sub("ann").jti("t-ann-2"));
  auto bob = node.token(token_spec().sub("bob").jti("t-bob-1"));

  client::sse_stream s1(ep, "/v1/sse?stream=docs", bearer(by_jti));
  client::sse_stream s2(ep, "/v1/sse?stream=docs", bearer(other_of_ann));
  client::sse_stream s3(ep, "/v1/sse?stream=docs", bearer(bob));
  await_hello(s1);
  await_hello(s2);
  await_hello(s3);

  auto started = clock_type::now();
  REQUIRE(post(ep, admin, "/admin/v1/tokens/revoke", {{"jti", "t-ann-1"}}).status == 200);
  await_unauthorized(s1, 1s);
  CHECK(clock_type::now() - started < 1s);
  // Only that token: ann's other one and bob's still work.
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(other_of_ann)).status == 200);
  auto reconnect = client::request(ep, "GET", "/v1/sse?stream=docs", {}, bearer(by_jti));
  CHECK(reconnect.status == 401);
  CHECK(reconnect.body.find("revoked") != std::string::npos);

  started = clock_type::now();
  REQUIRE(post(ep, admin, "/admin/v1/tokens/revoke", {{"sub", "ann"}}).status == 200);
  await_unauthorized(s2, 1s);
  CHECK(clock_type::now() - started < 1s);
  core::sse_message m;
  CHECK(s3.next(m, 300ms) != client::sse_stream::result::closed);

  node.restart();
  ep = node.endpoint();
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(by_jti)).status == 401);
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(other_of_ann)).status == 401);
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(bob)).status == 200);
  // A token issued after the subject's revocation is good again.
  auto now_s = tenant_node::payload(token_spec())["iat"].get<long long>();
  auto fresh = node.token(token_spec().sub("ann").extra({{"iat", now_s + 2}}));
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(fresh)).status == 200);

  auto audit = read_file(node.audit_path());
  CHECK(audit.find("\"action\":\"revoke\"") != std::string::npos);
  CHECK(audit.find("\"action\":\"admission_denied\"") != std::string::npos);
  CHECK(audit.find(by_jti) == std::string::npos);
  CHECK(audit.find(node.acme_secret()) == std::string::npos);
}

TEST_CASE("a reload that removes the admitting key ends its sessions (SIGHUP and POST)", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto hs = node.token(token_spec().sub("ann"));
  auto rs = node.token_rs256(token_spec().sub("ray").admin(true));
  client::sse_stream a(ep, "/v1/sse?stream=docs", bearer(hs));
  client::sse_stream b(ep, "/v1/sse?stream=docs", bearer(rs));
  await_hello(a);
  await_hello(b);

  node.write_config(false);
  auto started = clock_type::now();
  ::kill(node.process().pid(), SIGHUP);
  auto data = await_unauthorized(a, 2s);
  CHECK(clock_type::now() - started < 2s);
  CHECK(data["reason"] == "token no longer valid: the key that verified it is no longer configured");
  core::sse_message m;
  CHECK(b.next(m, 300ms) != client::sse_stream::result::closed);
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(hs)).status == 401);

  node.write_config(true);
  // Only an operator's admin reloads the node; acme's admin is refused.
  CHECK(post(ep, rs, "/admin/v1/reload", json::object()).status == 403);
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(hs)).status == 401);
  auto ops = node.token(token_spec().tenant("ops").sub("oli").admin(true));
  auto reloaded = post(ep, ops, "/admin/v1/reload", json::object());
  CHECK(reloaded.status == 200);
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(hs)).status == 200);
  // The key came back; the session it never concerned stayed open throughout
  // both reloads: it still receives what is published.
  REQUIRE(post(ep, rs, "/v1/streams/docs/events", {{"path", "/a"}, {"type", "note"}, {"data", {{"n", 1}}}})
              .status == 201);
  auto still = collect_data_events(b, 1, 5s);
  REQUIRE(still.events.size() == 1);
  CHECK(still.events[0].path == "/a");
  auto audit = read_file(node.audit_path());
  CHECK(audit.find("SIGHUP") != std::string::npos);
  CHECK(audit.find("POST /admin/v1/reload") != std::string::npos);
}

TEST_CASE("event content cannot inject SSE events or fields", "[security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto token = node.token(token_spec());
  client::sse_stream session(ep, "/v1/sse?stream=docs", bearer(token));
  await_hello(session);
  const std::string evil = "x\n\nevent: unauthorized\ndata: {}\r\n\r\nid: 9\rretry: 1\n\0tail";
  json body = {{"path", "/a"}, {"type", "MODIFIED"}, {"data", {{"text", evil}, {"nested", {evil}}}}};
  REQUIRE(post(ep, token, "/v1/streams/docs/events", body).status == 201);
  REQUIRE(post(ep, token, "/v1/streams/docs/events", {{"path", "/b"}, {"data", "after"}}).status == 201);
  auto got = collect_data_events(session, 2, 5s);
  REQUIRE(got.events.size() == 2);
  CHECK(got.events[0].data["text"] == evil);
  CHECK(got.events[0].data["nested"][0] == evil);
  CHECK(got.events[1].path == "/b");
  CHECK_FALSE(got.control);
  // Paths and types with control characters are refused before they are stored.
  CHECK(post(ep, token, "/v1/streams/docs/events", {{"path", "/a\nevent: x"}}).status == 400);
  CHECK(post(ep, token, "/v1/streams/docs/events", {{"path", "/a"}, {"type", "X\r\nY"}}).status == 400);
}

TEST_CASE("notification scoping narrows who is told, after the grants", "[security]") {
  tenant_node node(
      "    notification_scopes:\n"
      "      - {stream: inbox, scope: subject, field: /data/owner}\n"
      "      - {stream: \"fin-*\", scope: expression, expression: 'has(subscriber.groups, \"finance\") and "
      "event.type ~= \"DRAFT\"'}\n");
  auto ep = node.endpoint();
  auto writer = node.token(token_spec().sub("system"));
  auto ann = node.token(token_spec().sub("ann").extra({{"groups", {"finance"}}}));
  auto bob = node.token(token_spec().sub("bob").extra({{"groups", {"sales"}}}));

  client::sse_stream ann_inbox(ep, "/v1/sse?stream=inbox", bearer(ann));
  client::sse_stream bob_inbox(ep, "/v1/sse?stream=inbox", bearer(bob));
  client::sse_stream ann_fin(ep, "/v1/sse?stream=fin-eu", bearer(ann));
  client::sse_stream bob_fin(ep, "/v1/sse?stream=fin-eu", bearer(bob));
  for (auto* s : {&ann_inbox, &bob_inbox, &ann_fin, &bob_fin}) await_hello(*s);

  for (const char* owner : {"bob", "ann", "bob"})
    REQUIRE(
        post(ep, writer, "/v1/streams/inbox/events", {{"path", "/m"}, {"data", {{"owner", owner}}}}).status ==
        201);
  REQUIRE(post(ep, writer, "/v1/streams/fin-eu/events", {{"path", "/q1"}, {"type", "DRAFT"}}).status == 201);
  REQUIRE(post(ep, writer, "/v1/streams/fin-eu/events", {{"path", "/q2"}, {"type", "FINAL"}}).status == 201);

  auto ann_got = collect_data_events(ann_inbox, 1, 5s);
  REQUIRE(ann_got.events.size() == 1);
  CHECK(ann_got.events[0].data["owner"] == "ann");
  auto bob_got = collect_data_events(bob_inbox, 2, 5s);
  REQUIRE(bob_got.events.size() == 2);
  for (const auto& e : bob_got.events) CHECK(e.data["owner"] == "bob");
  auto fin = collect_data_events(ann_fin, 1, 5s);
  REQUIRE(fin.events.size() == 1);
  CHECK(fin.events[0].path == "/q2");
  // bob is not in finance: nothing, then a marker everyone may see proves it.
  REQUIRE(
      post(ep, writer, "/v1/streams/inbox/events", {{"path", "/m"}, {"data", {{"owner", "ann"}}}}).status ==
      201);
  core::sse_message m;
  CHECK(bob_fin.next(m, 300ms) == client::sse_stream::result::timeout);
}
