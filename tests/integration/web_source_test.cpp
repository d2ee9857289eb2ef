// Webhook and poll sources against the real tidingsd (issue 4): a resource's
// stream read by URI over SSE, a watch's notices, token rotation, unknown
// tokens, a token collision refused at start, the source stopped with its
// last subscriber, resubscribe with backoff, retrying past the steps and healing, a
// restart diffed against the stored snapshot, and the poll's floor, baseline
// and skipped failed fetches. Backends are a local HTTP server.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/fake_backend.hpp"
#include "tests/support/metrics_scrape.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

std::filesystem::path write_config(const temp_dir& dir, const std::string& yaml) {
  auto path = dir.path() / "tidings.yaml";
  std::ofstream(path) << yaml;
  return path;
}

json get_json(const client::endpoint& ep, const std::string& target) {
  auto r = client::request(ep, "GET", target);
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

client::http_response fire(const client::endpoint& ep, const std::string& token,
                           const client::header_list& headers = {}) {
  return client::request(ep, "POST", "/webhooks/resource-updated/" + token, "{\"ignored\":true}", headers);
}

// tidingsd with this config, expected to refuse to start; run to its end.
command_result run_refused(const temp_dir& dir, const std::filesystem::path& cfg) {
  return run_command(
      {tidingsd_binary(), "--data-dir", (dir.path() / "data").string(), "--config", cfg.string()},
      std::nullopt, 20s);
}

// The sources the node runs now; a source exists only while subscribed.
json sources_now(const client::endpoint& ep) {
  return get_json(ep, "/v1/sources");
}

// Waits (bounded, through the node's own log) until no source is running.
bool await_no_sources(tidingsd_process& node) {
  return node.await_log("\"source.stopping\"", 5s);
}

const char* hook_config = R"(
upstreams:
  resources:
    - uri: hook://deploys
      name: deploys
      description: "Deploys of the app. Example: watch hook://deploys"
      watch:
        strategy: {type: webhook, token: "${env.TIDINGS_TEST_HOOK}", previous_tokens: ["${env.TIDINGS_TEST_HOOK_OLD}"]}
)";

}  // namespace

TEST_CASE("a webhook resource feeds SSE sessions and watches, with token rotation", "[sources][webhook]") {
  setenv("TIDINGS_TEST_HOOK", "new-token-0123456789", 1);
  setenv("TIDINGS_TEST_HOOK_OLD", "old-token-0123456789", 1);
  temp_dir dir;
  auto cfg = write_config(dir, hook_config);
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();

  auto resources = get_json(ep, "/v1/resources");
  REQUIRE(resources.size() == 1);
  CHECK(resources[0]["uri"] == "hook://deploys");
  CHECK(resources[0]["example"] == "watch hook://deploys");
  CHECK(resources[0]["server"] == "resources");
  CHECK(resources[0]["subscribable"] == true);
  CHECK(resources[0]["template"] == false);
  // The configured token is never logged in full.
  CHECK(node.log().find("new-token-0123456789") == std::string::npos);

  SECTION("unknown tokens get 404, and a firing with nobody subscribed still answers") {
    auto unknown = fire(ep, "not-a-token");
    CHECK(unknown.status == 404);
    CHECK(json::parse(unknown.body) == json{{"error", "unknown webhook token"}});
    auto ok = fire(ep, "new-token-0123456789");
    CHECK(ok.status == 200);
    CHECK(json::parse(ok.body) == json{{"ok", true}, {"uri", "hook://deploys"}});
    CHECK(sources_now(ep).empty());
    auto browser = fire(ep, "new-token-0123456789", {{"Origin", "https://evil.example"}});
    CHECK(browser.status == 403);
  }

  SECTION("both tokens route to the resource's stream; the source ends with its last subscriber") {
    client::sse_stream session(ep, uri_target("hook://deploys"));
    auto hello = await_hello(session);
    auto running = sources_now(ep);
    REQUIRE(running.size() == 1);
    CHECK(running[0]["uri"] == "hook://deploys");
    CHECK(running[0]["subscribers"] == 1);
    auto stream = running[0]["stream"].get<std::string>();
    CHECK(stream.rfind("src:", 0) == 0);
    CHECK(hello["streams"].contains(stream));

    auto watch = start_watch_ok(ep, {{"name", "deploys"}, {"uri", "hook://deploys"}, {"debounce_ms", 50}});
    CHECK(watch["shape"] == "event-log");
    CHECK(sources_now(ep)[0]["subscribers"] == 2);  // one source, two subscribers
    client::sse_stream notices(ep, sse_target({"watch:deploys"}));
    await_hello(notices);

    REQUIRE(fire(ep, "new-token-0123456789").status == 200);
    REQUIRE(fire(ep, "old-token-0123456789").status == 200);  // still routed during the rotation
    auto got = collect_data_events(session, 2, 10s);
    REQUIRE(got.events.size() == 2);
    for (const auto& e : got.events) {
      CHECK(e.stream == stream);
      CHECK(e.type == "CHANGED");
      CHECK(e.data["uri"] == "hook://deploys");
    }
    auto notice = await_notices(notices, 1, 10s);
    REQUIRE_FALSE(notice.empty());
    auto lines = notice_lines(notice[0]);
    CHECK(lines.front().rfind("CHANGED", 0) == 0);

    CHECK(stop_watch(ep, "deploys"));
    CHECK(sources_now(ep)[0]["subscribers"] == 1);
    session.close();
    REQUIRE(await_no_sources(node));
    CHECK(sources_now(ep).empty());
  }
}

TEST_CASE("two resources sharing a webhook token stop the node at start, naming both", "[sources][webhook]") {
  temp_dir dir;
  auto cfg = write_config(dir, R"(
upstreams:
  resources:
    - uri: hook://a
      watch: {strategy: {type: webhook, token: same-token-1234}}
    - uri: hook://b
      watch: {strategy: {type: webhook, token: other-token, previous_tokens: [same-token-1234]}}
)");
  auto r = run_refused(dir, cfg);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("hook://a") != std::string::npos);
  CHECK(r.err.find("hook://b") != std::string::npos);
  CHECK(r.err.find("share a webhook token") != std::string::npos);
}

TEST_CASE("an unset ${env.NAME} in the upstreams stops the node, naming it", "[sources][config]") {
  unsetenv("TIDINGS_TEST_UNSET_TOKEN");
  temp_dir dir;
  auto cfg = write_config(dir, R"(
upstreams:
  resources:
    - uri: hook://a
      watch: {strategy: {type: webhook, token: "${env.TIDINGS_TEST_UNSET_TOKEN}"}}
)");
  auto r = run_refused(dir, cfg);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("TIDINGS_TEST_UNSET_TOKEN") != std::string::npos);
}

TEST_CASE("a URI no upstream serves fails the watch and the session at once", "[sources]") {
  temp_dir dir;
  auto cfg = write_config(dir, hook_config);
  setenv("TIDINGS_TEST_HOOK", "new-token-0123456789", 1);
  setenv("TIDINGS_TEST_HOOK_OLD", "old-token-0123456789", 1);
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();
  auto watch = start_watch(ep, {{"name", "x"}, {"uri", "nothing://here"}});
  CHECK(watch.status == 400);
  CHECK(json::parse(watch.body)["error"] == "no upstream serves nothing://here");
  auto sse = client::request(ep, "GET", uri_target("nothing://here"));
  CHECK(sse.status == 400);
  CHECK(list_watches(ep).empty());
  CHECK(sources_now(ep).empty());
}

TEST_CASE(
    "a backend webhook diffs the backend, resubscribes, retries past its backoff steps and heals, and diffs "
    "across a restart",
    "[sources][webhook]") {
  fake_backend backend;
  backend.set(200, R"({"web":{"replicas":1},"db":{"replicas":1}})");
  temp_dir dir;
  auto cfg = write_config(dir, R"(
upstreams:
  resources:
    - uri: app://deployments
      backend: {url: ")" + backend.url() +
                                   R"(", expected_status_codes: [200]}
      watch: {strategy: {type: webhook, token: backend-token-123}}
)");
  auto data = dir.path() / "data";
  std::vector<std::string> args{"--config", cfg.string(), "--source-backoff-ms", "20"};
  std::string last_notice;
  {
    tidingsd_process node(data, args);
    auto ep = node.endpoint();
    start_watch_ok(ep, {{"name", "deps"}, {"uri", "app://deployments"}, {"debounce_ms", 50}});
    client::sse_stream notices(ep, sse_target({"watch:deps"}));
    await_hello(notices);

    backend.set(200, R"({"web":{"replicas":3},"db":{"replicas":1}})");
    REQUIRE(fire(ep, "backend-token-123").status == 200);
    auto first = await_notices(notices, 1, 10s);
    REQUIRE(first.size() == 1);
    CHECK(notice_lines(first[0]) == std::vector<std::string>{"MODIFIED web (replicas: 1→3)"});

    // A backend that fails once is read again after a backoff.
    backend.set(503, "{}");
    REQUIRE(fire(ep, "backend-token-123").status == 200);
    REQUIRE(node.await_log("\"source.resubscribing\"", 5s));
    backend.set(200, R"({"web":{"replicas":4},"db":{"replicas":1}})");
    auto second = await_notices(notices, 1, 10s);
    REQUIRE(second.size() == 1);
    CHECK(notice_lines(second[0]) == std::vector<std::string>{"MODIFIED web (replicas: 3→4)"});
    last_notice = second[0].cursor;
    CHECK(node.terminate() == 0);
  }
  // Changed while the node was down: the restored watch hears of it once.
  backend.set(200, R"({"web":{"replicas":4}})");
  {
    tidingsd_process node(data, args);
    auto ep = node.endpoint();
    client::sse_stream notices(ep, sse_target({"watch:deps"}, last_notice));
    await_hello(notices);
    auto missed = await_notices(notices, 1, 10s);
    REQUIRE(missed.size() == 1);
    CHECK(notice_lines(missed[0]) == std::vector<std::string>{"DELETED db"});

    // Down past the last backoff step (320 ms here): the source says so
    // once, keeps retrying at that pace, and heals by itself when the
    // backend is back; the watch stays running throughout.
    backend.set(500, "{}");
    REQUIRE(fire(ep, "backend-token-123").status == 200);
    auto down = await_notices(notices, 1, 10s);
    REQUIRE(down.size() == 1);
    auto lines = notice_lines(down[0]);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("ERROR the upstream is unreachable after 5 attempts") != std::string::npos);
    auto retrying = sources_now(ep);
    REQUIRE(retrying.size() == 1);
    CHECK(retrying[0]["state"] == "retrying");
    CHECK(retrying[0]["next_attempt_ms"].is_number_integer());
    auto counted = await_metrics(
        ep, [](const auto& m) { return m.value_or_zero("tidings_sources_retrying") == 1; }, 5s);
    CHECK(counted.value_or_zero("tidings_sources_retrying") == 1);
    auto watches = list_watches(ep);
    REQUIRE(watches.size() == 1);
    CHECK(watches[0]["state"] == "running");

    backend.set(200, R"({"web":{"replicas":5}})");
    auto healed = await_notices(notices, 1, 10s);
    REQUIRE(healed.size() == 1);
    lines = notice_lines(healed[0]);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].starts_with("GAP the upstream was unreachable for "));
    CHECK(lines[1] == "MODIFIED web (replicas: 4→5)");
    auto running = sources_now(ep);
    REQUIRE(running.size() == 1);
    CHECK(running[0]["state"] == "running");
    CHECK_FALSE(running[0].contains("next_attempt_ms"));
    auto recovered = await_metrics(
        ep, [](const auto& m) { return m.value_or_zero("tidings_sources_retrying") == 0; }, 5s);
    CHECK(recovered.value_or_zero("tidings_sources_retrying") == 0);
    REQUIRE(node.await_log("\"source.recovered\"", 5s));
  }
}

// The floor is lowered to 500 ms (upstreams.poll_floor_ms) so that the
// test waits for two polls a second rather than twenty; the 10 s default is
// checked in tests/broker/config_test.cpp.
TEST_CASE("a poll resource: the floor raises its interval, a baseline never notifies, failed fetches skipped",
          "[sources][poll]") {
  fake_backend backend;
  backend.set(200, "report v1", "text/plain");
  temp_dir dir;
  auto cfg = write_config(dir, R"(
upstreams:
  poll_floor_ms: 500
  resources:
    - uri: drive://reports
      backend: {url: ")" + backend.url() +
                                   R"(", expected_status_codes: [200, 404]}
      watch: {strategy: {type: poll, interval_ms: 100}}
)");
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();
  CHECK(node.await_log("\"source.poll_interval_raised\"", 5s));
  CHECK(node.log().find("\"interval_ms\":500") != std::string::npos);

  client::sse_stream session(ep, uri_target("drive://reports"));
  await_hello(session);
  CHECK(backend.requests() == 1);  // the baseline, read at subscribe
  // A failed fetch is skipped: no event, and the baseline stays.
  backend.set(500, "oops");
  REQUIRE(node.await_log("\"source.poll_failed\"", 15s));
  // Counted and audited, while the watcher keeps running on its last content.
  auto m = await_metrics(
      ep, [](const scraped_metrics& s) { return s.value_or_zero("tidings_watch_poll_failures_total") >= 1; },
      5s);
  CHECK(m.value_or_zero("tidings_watch_poll_failures_total") >= 1);
  CHECK(m.value("tidings_watch_active_watchers", {{"strategy", "poll"}}) == 1);
  // A 404 is accepted here: the disappearance is the change.
  backend.set(404, "gone", "text/plain");
  auto got = collect_data_events(session, 1, 15s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].type == "CHANGED");
  CHECK(got.events[0].data["old"] == "report v1");
  CHECK(got.events[0].data["new"] == "gone");
}

TEST_CASE("a reload applies new webhook tokens live, other upstream changes wait for a restart",
          "[sources][webhook][config]") {
  temp_dir dir;
  auto hook = [](const std::string& token, const std::string& previous, const std::string& extra = {}) {
    return "upstreams:\n"
           "  resources:\n"
           "    - uri: hook://deploys\n"
           "      watch: {strategy: {type: webhook, token: " +
           token + ", previous_tokens: [" + previous + "]}}\n" + extra;
  };
  auto cfg = write_config(dir, hook("first-token-0123456789", ""));
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();
  // The reload's tokens reach the sources thread before any webhook answered
  // after the reload's reply, so no waiting is needed.
  auto reload = [&](const std::string& yaml) {
    write_config(dir, yaml);
    auto r = client::request(ep, "POST", "/admin/v1/reload", "{}", {{"Content-Type", "application/json"}});
    INFO(r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body)["restart_needed"];
  };
  REQUIRE(fire(ep, "first-token-0123456789").status == 200);

  // A new token replaces the old one, which is unknown from then on.
  CHECK(reload(hook("second-token-0123456789", "")) == json::array());
  CHECK(fire(ep, "first-token-0123456789").status == 404);
  CHECK(fire(ep, "second-token-0123456789").status == 200);

  // A rotation: the previous token keeps working while it is listed.
  CHECK(reload(hook("third-token-0123456789", "second-token-0123456789")) == json::array());
  CHECK(fire(ep, "third-token-0123456789").status == 200);
  CHECK(fire(ep, "second-token-0123456789").status == 200);
  CHECK(fire(ep, "first-token-0123456789").status == 404);

  // Any other change to the upstreams needs a restart, and leaves the
  // tokens in use alone.
  CHECK(reload(hook("fourth-token-0123456789", "", "  allowed_origins: [https://app.example]\n")) ==
        json::array({"upstreams"}));
  CHECK(fire(ep, "fourth-token-0123456789").status == 404);
  CHECK(fire(ep, "third-token-0123456789").status == 200);
  // Tokens are never logged in full.
  CHECK(node.log().find("third-token-0123456789") == std::string::npos);
  CHECK(node.await_log("\"webhook.tokens_updated\"", 5s));
}

TEST_CASE("a POST backend that must answer JSON, polled every 60 s by a watch without a strategy",
          "[sources][poll]") {
  fake_backend backend;
  backend.set(200, R"({"files":[{"id":"a","md5":"1"}]})");
  temp_dir dir;
  // (A delimiter of its own: the body holds `)"`.)
  auto cfg = write_config(dir, R"yaml(
upstreams:
  resources:
    - uri: drive://search
      backend:
        kind: http
        url: ")yaml" + backend.url() +
                                   R"yaml("
        method: post
        body: '{"q":"in:reports","fields":"files(id,md5)"}'
        require_json_response: true
      watch: {}
)yaml");
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();
  auto read = client::request(ep, "GET", "/v1/resources/read?uri=" + client::url_encode("drive://search"));
  INFO(read.body);
  REQUIRE(read.status == 200);
  CHECK(json::parse(read.body)["files"][0]["id"] == "a");
  CHECK(backend.last_method() == "POST");
  CHECK(backend.last_body() == R"json({"q":"in:reports","fields":"files(id,md5)"})json");
  // A 200 that is not JSON (a login page) fails the read rather than
  // becoming the resource's state.
  backend.set(200, "<html>sign in</html>", "text/html");
  auto page = client::request(ep, "GET", "/v1/resources/read?uri=" + client::url_encode("drive://search"));
  CHECK(page.status == 502);
  CHECK(json::parse(page.body)["error"] ==
        "drive://search: backend answered HTTP 200 with a body that is not JSON (require_json_response)");
  // The strategy-less watch is a poll at the 60 s default.
  backend.set(200, R"({"files":[]})");
  client::sse_stream session(ep, uri_target("drive://search"));
  await_hello(session);
  auto sources = sources_now(ep);
  REQUIRE(sources.size() == 1);
  CHECK(sources[0]["server"] == "resources");
  auto admin = get_json(ep, "/admin/v1/watches");
  REQUIRE(admin["watches"].size() == 1);
  CHECK(admin["watches"][0]["strategy"] == "poll");
}
