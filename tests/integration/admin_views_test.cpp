// The admin API's views against the real tidingsd with three tenants
// (tenant_node: acme, globex, and the operator tenant ops): they reflect a
// known state (N sessions, M watches, one watcher per upstream URI however
// many subscribe), an operator sees every tenant, a tenant's admin only its
// own rows and no drain or reload, a non-admin nothing under /admin.

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

json get_view(const client::endpoint& ep, const std::string& token, const std::string& view) {
  auto r = client::request(ep, "GET", "/admin/v1/" + view, {}, bearer(token));
  INFO("GET /admin/v1/" << view << ": " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  auto body = parse_body(r);
  REQUIRE(body.is_object());
  CHECK_FALSE(body.contains("partial"));
  REQUIRE(body[view].is_array());
  return body;
}

// The view's body once `done` holds for it (the node learns of closes and
// subscriptions asynchronously), or the last one seen after the deadline.
json await_view(const client::endpoint& ep, const std::string& token, const std::string& view,
                const std::function<bool(const json&)>& done) {
  json body;
  for (auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;) {
    body = get_view(ep, token, view);
    if (done(body)) break;
    // Pace the retries: on 2 shared cores a tight loop slows the node it waits on.
    std::this_thread::sleep_for(20ms);
  }
  return body;
}

std::multiset<std::string> values_of(const json& rows, const char* key) {
  std::multiset<std::string> out;
  for (const auto& row : rows) out.insert(row[key].get<std::string>());
  return out;
}

const json* row_where(const json& rows, const char* key, const std::string& value) {
  for (const auto& row : rows)
    if (row[key] == value) return &row;
  return nullptr;
}

std::unique_ptr<client::sse_stream> open_session(const client::endpoint& ep, const std::string& target,
                                                 const std::string& token) {
  auto s = std::make_unique<client::sse_stream>(ep, target, bearer(token));
  await_hello(*s);
  return s;
}

}  // namespace

TEST_CASE("admin views reflect a known state (N sessions, M watches, one watcher per URI)", "[admin]") {
  temp_dir files;
  auto file = write_watched_file(files.path(), R"({"replicas":1})");
  auto root = file.parent_path();
  const auto uri = "file://" + file.string();
  tenant_node node({}, {}, "upstreams:\n  files:\n    roots: [" + root.string() + "]\n");
  auto ep = node.endpoint();

  const auto ann = node.token(token_spec().sub("ann"));
  const auto bob = node.token(token_spec().sub("bob"));
  const auto acme_admin = node.token(token_spec().sub("root").admin(true));
  const auto gus = node.token(token_spec().tenant("globex").sub("gus"));
  const auto globex_admin = node.token(token_spec().tenant("globex").sub("gina").admin(true));
  const auto ops = node.token(token_spec().tenant("ops").sub("oli").admin(true));

  // Known publishes: acme/docs 3 events, globex/news 2.
  std::string docs_head, news_head;
  for (int i = 0; i < 3; ++i) docs_head = publish(ep, "docs", event_json("/a", "ADDED", i), bearer(ann));
  for (int i = 0; i < 2; ++i) news_head = publish(ep, "news", event_json("/n", "ADDED", i), bearer(gus));

  // N = 3 stream sessions, then 3 sessions of three subjects on one file URI.
  std::vector<std::unique_ptr<client::sse_stream>> sessions;
  sessions.push_back(open_session(ep, "/v1/sse?stream=docs", ann));
  sessions.push_back(open_session(ep, "/v1/sse?stream=docs:/a&stream=news", bob));
  sessions.push_back(open_session(ep, "/v1/sse?stream=news", gus));
  for (const char* sub : {"u1", "u2", "u3"})
    sessions.push_back(
        open_session(ep, "/v1/sse?uri=" + client::url_encode(uri), node.token(token_spec().sub(sub))));

  // M = 2 watches on streams (they hold no upstream source).
  REQUIRE(post_json(ep, ann, "/v1/watches", json{{"name", "w1"}, {"uri", "stream://docs"}}.dump()).status ==
          201);
  REQUIRE(post_json(ep, gus, "/v1/watches", json{{"name", "w2"}, {"uri", "stream://news"}}.dump()).status ==
          201);

  SECTION("an operator sees every tenant") {
    auto watchers = get_view(ep, ops, "watches")["watches"];
    REQUIRE(watchers.size() == 1);
    const auto& w = watchers[0];
    CHECK(w["uri"] == uri);
    CHECK(w["tenant"] == "acme");
    CHECK(w["subscribers"] == 3);
    CHECK(w["strategy"] == "inotify");
    CHECK(w["shape"] == "state");
    CHECK(w["state"] == "running");
    CHECK(w["failures"] == 0);
    const auto source_stream = w["stream"].get<std::string>();

    auto session_body = client::request(ep, "GET", "/admin/v1/sessions", {}, bearer(ops)).body;
    for (const auto* token : {&ann, &bob, &gus, &ops}) CHECK(session_body.find(*token) == std::string::npos);
    auto rows = get_view(ep, ops, "sessions")["sessions"];
    REQUIRE(rows.size() == 6);
    CHECK(values_of(rows, "subject") == std::multiset<std::string>{"ann", "bob", "gus", "u1", "u2", "u3"});
    CHECK(values_of(rows, "tenant") ==
          std::multiset<std::string>{"acme", "acme", "acme", "acme", "acme", "globex"});
    const auto* bobs = row_where(rows, "subject", "bob");
    REQUIRE(bobs);
    CHECK((*bobs)["streams"] == json::array({"docs:/a", "news"}));
    CHECK((*bobs)["queue_frames"].is_number_unsigned());
    CHECK((*bobs)["age_seconds"].get<std::int64_t>() >= 0);
    CHECK((*bobs)["remote"].get<std::string>().starts_with("127.0.0.1:"));
    CHECK((*row_where(rows, "subject", "u1"))["streams"] == json::array({source_stream}));
    // Sorted by tenant, then subject.
    CHECK(rows[0]["subject"] == "ann");
    CHECK(rows[5]["tenant"] == "globex");

    auto streams = get_view(ep, ops, "streams")["streams"];
    auto node_id = get_view(ep, ops, "nodes")["nodes"][0]["id"].get<std::string>();
    const json* docs = nullptr;
    const json* news = nullptr;
    for (const auto& s : streams) {
      if (s["tenant"] == "acme" && s["name"] == "docs") docs = &s;
      if (s["tenant"] == "globex" && s["name"] == "news") news = &s;
    }
    REQUIRE(docs);
    REQUIRE(news);
    CHECK((*docs)["head"] == docs_head);
    CHECK((*docs)["first_seq"] == 1);
    CHECK((*docs)["events"] == 3);
    CHECK((*docs)["subscribers"] == 2);
    CHECK((*docs)["owner"] == node_id);
    CHECK((*docs)["bytes"].get<std::uint64_t>() > 0);
    CHECK((*news)["head"] == news_head);
    CHECK((*news)["subscribers"] == 1);  // gus; bob's "news" is acme's, which does not exist

    // A change of the file: the source's stream exists now, with its three
    // sessions, and the watcher shows when it last fired.
    std::ofstream(file) << R"({"replicas":2})";
    auto with_source = await_view(ep, ops, "streams", [&](const json& b) {
      return row_where(b["streams"], "name", source_stream) != nullptr;
    })["streams"];
    const auto* src = row_where(with_source, "name", source_stream);
    REQUIRE(src);
    CHECK((*src)["subscribers"] == 3);
    CHECK((*src)["tenant"] == "acme");
    auto fired = await_view(ep, ops, "watches", [](const json& b) {
      return b["watches"].size() == 1 && b["watches"][0]["last_fire_ms"].is_number();
    })["watches"];
    REQUIRE(fired.size() == 1);
    CHECK(fired[0]["events"].get<std::uint64_t>() >= 1);
    CHECK(fired[0]["last_fire_ms"].is_number());

    auto nodes = get_view(ep, ops, "nodes")["nodes"];
    REQUIRE(nodes.size() == 1);
    CHECK(nodes[0]["id"].get<std::string>().size() == 16);
    CHECK(nodes[0]["address"] == ep.host + ":" + std::to_string(ep.port));
    CHECK(nodes[0]["state"] == "alive");
    CHECK(nodes[0]["self"] == true);
    CHECK(nodes[0]["sessions"] == 6);
    CHECK(nodes[0]["watches"] == 2);
    CHECK(nodes[0]["sources"] == 1);

    auto tenants = get_view(ep, ops, "tenants")["tenants"];
    REQUIRE(tenants.size() == 3);
    CHECK(values_of(tenants, "tenant") == std::multiset<std::string>{"acme", "globex", "ops"});
    const auto& acme = *row_where(tenants, "tenant", "acme");
    CHECK(acme["sessions"]["used"] == 5);
    CHECK(acme["sessions"]["limit"] == 1000);
    CHECK(acme["watches"]["used"] == 1);
    CHECK(acme["watches"]["limit"] == 5);
    CHECK(acme["sources"] == 1);
    CHECK(acme["operator"] == false);
    const auto& globex = *row_where(tenants, "tenant", "globex");
    CHECK(globex["sessions"]["used"] == 1);
    CHECK(globex["watches"]["used"] == 1);
    CHECK((*row_where(tenants, "tenant", "ops"))["operator"] == true);

    // A session that ends leaves the views; the watcher stays while others hold it.
    sessions[3].reset();
    auto after = await_view(ep, ops, "watches", [](const json& b) {
      return b["watches"].size() == 1 && b["watches"][0]["subscribers"] == 2;
    });
    CHECK(after["watches"][0]["subscribers"] == 2);
    CHECK(await_view(ep, ops, "sessions", [](const json& b) { return b["sessions"].size() == 5; })["sessions"]
              .size() == 5);
  }

  SECTION("a tenant's admin sees only its own rows, and may not drain or reload") {
    auto watchers = get_view(ep, globex_admin, "watches")["watches"];
    CHECK(watchers.empty());
    CHECK(get_view(ep, acme_admin, "watches")["watches"].size() == 1);

    auto rows = get_view(ep, globex_admin, "sessions")["sessions"];
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["subject"] == "gus");
    CHECK(get_view(ep, acme_admin, "sessions")["sessions"].size() == 5);

    auto streams = get_view(ep, globex_admin, "streams")["streams"];
    for (const auto& s : streams) CHECK(s["tenant"] == "globex");
    CHECK(row_where(streams, "name", "news"));
    CHECK_FALSE(row_where(streams, "name", "docs"));

    auto tenants = get_view(ep, globex_admin, "tenants")["tenants"];
    REQUIRE(tenants.size() == 1);
    CHECK(tenants[0]["tenant"] == "globex");

    // Where the node is and whether it is up; its counts are every tenant's
    // load, for operators only.
    auto nodes = get_view(ep, globex_admin, "nodes")["nodes"];
    REQUIRE(nodes.size() == 1);
    CHECK(nodes[0]["state"] == "alive");
    for (const char* count : {"sessions", "watches", "sources", "streams"})
      CHECK_FALSE(nodes[0].contains(count));

    for (const char* action : {"/admin/v1/drain", "/admin/v1/reload"}) {
      INFO(action);
      CHECK(post_json(ep, globex_admin, action, "{}").status == 403);
      CHECK(post_json(ep, acme_admin, action, "{}").status == 403);
    }
    CHECK(client::request(ep, "GET", "/readyz", {}, bearer(ann)).status == 200);
    std::ifstream audit(node.audit_path());
    std::string text{std::istreambuf_iterator<char>(audit), std::istreambuf_iterator<char>()};
    CHECK(text.find("\"route\":\"/admin/v1/drain\"") != std::string::npos);
  }

  SECTION("a token without tidings.admin gets 403 everywhere under /admin") {
    for (const char* view : {"watches", "streams", "sessions", "nodes", "tenants"}) {
      INFO(view);
      CHECK(client::request(ep, "GET", std::string("/admin/v1/") + view, {}, bearer(ann)).status == 403);
    }
    for (const char* action : {"/admin/v1/drain", "/admin/v1/reload", "/admin/v1/tokens/revoke"})
      CHECK(post_json(ep, ann, action, R"({"sub":"bob"})").status == 403);
    auto nonadmin_ops = node.token(token_spec().tenant("ops").sub("viewer"));
    CHECK(client::request(ep, "GET", "/admin/v1/sessions", {}, bearer(nonadmin_ops)).status == 403);
    CHECK(post_json(ep, nonadmin_ops, "/admin/v1/drain", "{}").status == 403);
  }
}

TEST_CASE("without tenants the local caller is the operator", "[admin]") {
  temp_dir dir;
  tidingsd_process node(dir.path() / "data");
  auto ep = node.endpoint();
  publish(ep, "docs", event_json("/a", "ADDED", 1));
  client::sse_stream session(ep, "/v1/sse?stream=docs");
  await_hello(session);
  auto sessions = parse_body(client::request(ep, "GET", "/admin/v1/sessions"));
  REQUIRE(sessions["sessions"].size() == 1);
  CHECK(sessions["sessions"][0]["tenant"] == "default");
  CHECK(sessions["sessions"][0]["subject"] == "anonymous");
  auto tenants = parse_body(client::request(ep, "GET", "/admin/v1/tenants"));
  REQUIRE(tenants["tenants"].size() == 1);
  CHECK(tenants["tenants"][0]["operator"] == true);
  CHECK(tenants["tenants"][0]["sessions"]["limit"].is_null());
  CHECK(parse_body(client::request(ep, "GET", "/admin/v1/watches"))["watches"].empty());
  // The node id survives a restart on the same data.
  auto id = parse_body(client::request(ep, "GET", "/admin/v1/nodes"))["nodes"][0]["id"];
  CHECK(client::request(ep, "PUT", "/admin/v1/nodes").status == 405);
  CHECK(client::request(ep, "GET", "/admin/v1/drain").status == 405);
  session.close();
  CHECK(node.terminate() == 0);
  tidingsd_process again(dir.path() / "data");
  CHECK(parse_body(client::request(again.endpoint(), "GET", "/admin/v1/nodes"))["nodes"][0]["id"] == id);
}
