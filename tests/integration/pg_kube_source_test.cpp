// PostgreSQL LISTEN/NOTIFY and Kubernetes-style watches through the real
// tidingsd (issue 4): a real PostgreSQL from Debian and the fake API server
// (tests/support), a watch's notices and SSE sessions by URI, the upstream
// side seeing the LISTEN connection or the watch stream closed when the
// last subscriber leaves, GAP after a PostgreSQL restart, an outage past the
// backoff steps healed, and a Kubernetes re-list after 410 Gone reporting the gap.

#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/fake_kube_server.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

std::vector<std::string> listeners(const std::string& conninfo, const std::string& channel) {
  std::vector<std::string> pids;
  for (const auto& row :
       pg_query(conninfo, "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN \"" + channel + "\"'"))
    pids.push_back(row.at(0));
  return pids;
}

json configmap(const std::string& name, const std::string& rv, json data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", "uid-" + name},
            {"resourceVersion", rv},
            {"managedFields", json::array({{{"manager", "kubectl"}}})}}},
          {"data", std::move(data)}};
}

}  // namespace

TEST_CASE(
    "PostgreSQL NOTIFY through tidingsd: notices, GAP after a restart, LISTEN closed, healed after an "
    "outage past the backoff steps",
    "[sources][postgres]") {
  postgres_server pg;
  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n  postgres:\n    app: {conninfo: \"" << pg.conninfo()
                     << "\", path_field: id, connect_timeout_ms: 2000}\n";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string(), "--source-backoff-ms", "50"});
  auto ep = node.endpoint();

  auto bad = start_watch(ep, {{"name", "bad"}, {"uri", "pg://app/" + std::string(70, 'x')}});
  CHECK(bad.status == 400);

  start_watch_ok(ep, {{"name", "orders"}, {"uri", "pg://app/orders"}, {"debounce_ms", 50}});
  client::sse_stream notices(ep, sse_target({"watch:orders"}));
  await_hello(notices);
  client::sse_stream session(ep, "/v1/sse?uri=" + client::url_encode("pg://app/orders"));
  await_hello(session);
  REQUIRE(listeners(pg.conninfo(), "orders").size() == 1);  // one LISTEN for both subscribers

  pg_query(pg.conninfo(), R"(NOTIFY orders, '{"id":"o-1","type":"CREATED","total":12}')");
  auto got = collect_data_events(session, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].type == "CREATED");
  CHECK(got.events[0].path == "/o-1");
  CHECK(got.events[0].data["payload"]["total"] == 12);
  auto first = await_notices(notices, 1, 10s);
  REQUIRE(first.size() == 1);

  // The server restarts: the source listens again and says what may be lost.
  // (A restart slower than the backoff steps, 1.55 s here, comes out as the
  // source's retrying ERROR and a second GAP, from the source itself.)
  pg.kill();
  pg.start();
  auto next_event = [&session](std::chrono::seconds timeout) {
    auto got = collect_data_events(session, 1, timeout);
    REQUIRE(got.events.size() == 1);
    return got.events[0];
  };
  auto outage_event = [](const auto& e) {
    return e.type == "GAP" || (e.type == "ERROR" && e.data.value("retrying", false));
  };
  auto gap = next_event(20s);
  while (gap.type != "GAP") {
    REQUIRE(outage_event(gap));
    gap = next_event(20s);
  }
  pg_query(pg.conninfo(), R"(NOTIFY orders, '{"id":"o-2","type":"PAID"}')");
  auto after = next_event(10s);
  while (after.type != "PAID") {
    REQUIRE(outage_event(after));
    after = next_event(10s);
  }

  // The last subscriber leaves: the LISTEN connection is closed upstream.
  CHECK(stop_watch(ep, "orders"));
  auto pids = listeners(pg.conninfo(), "orders");
  REQUIRE(pids.size() == 1);
  session.close();
  CHECK(await_process_exit(std::stoi(pids[0]), 10s));
  CHECK(listeners(pg.conninfo(), "orders").empty());

  // Down past the last backoff step (800 ms here): an ERROR says so, the
  // source keeps retrying, and once the server is back the watch goes on,
  // a GAP first.
  start_watch_ok(ep, {{"name", "late"}, {"uri", "pg://app/late"}, {"debounce_ms", 50}});
  client::sse_stream late(ep, sse_target({"watch:late"}));
  await_hello(late);
  pg.stop();
  auto down = await_notices(late, 1, 30s);
  REQUIRE(down.size() == 1);
  CHECK(notice_lines(down[0]).front().find("ERROR the upstream is unreachable after 5 attempts") !=
        std::string::npos);
  auto watches = list_watches(ep);
  REQUIRE(watches.size() == 1);
  CHECK(watches[0]["state"] == "running");
  pg.start();
  auto healed = await_notices(late, 1, 30s);
  REQUIRE(healed.size() == 1);
  CHECK(notice_lines(healed[0]).front().starts_with("GAP the upstream was unreachable for "));
  pg_query(pg.conninfo(), R"(NOTIFY late, '{"id":"l-1","type":"SHIPPED"}')");
  auto after_outage = await_notices(late, 1, 10s);
  REQUIRE(after_outage.size() == 1);
  CHECK(notice_lines(after_outage[0]).front().find("SHIPPED") != std::string::npos);
}

TEST_CASE("a Kubernetes-style watch through tidingsd: notices, re-list after 410 Gone, watch closed",
          "[sources][kube]") {
  fake_kube_server api;
  api.require_token("secret-token");
  const std::string path = "/api/v1/namespaces/default/configmaps";
  api.set_collection(path, json::array({configmap("cm-a", "10", {{"k", "1"}})}), "10");
  setenv("TIDINGS_TEST_KUBE_TOKEN", "secret-token", 1);
  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n  kube:\n    test: {server: \"" << api.url()
                     << "\", token: \"${env.TIDINGS_TEST_KUBE_TOKEN}\"}\n";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string(), "--source-backoff-ms", "50"});
  auto ep = node.endpoint();

  // A typo of a kind the API server has: its discovery document says which
  // (the seed's "did you mean").
  auto unknown = start_watch(ep, {{"name", "nope"}, {"uri", "kube://test/confgimaps?namespace=default"}});
  CHECK(unknown.status == 502);
  CHECK(unknown.body.find("404") != std::string::npos);
  CHECK(unknown.body.find("/api/v1 has no resource 'confgimaps'; did you mean: configmaps") !=
        std::string::npos);

  auto uri = "kube://test/configmaps?namespace=default";
  CHECK(start_watch_ok(ep, {{"name", "cms"}, {"uri", uri}, {"debounce_ms", 50}})["shape"] == "event-log");
  client::sse_stream notices(ep, sse_target({"watch:cms"}));
  await_hello(notices);
  REQUIRE(api.watches_open() == 1);
  for (const auto& r : api.requests()) CHECK(r.authorization == "Bearer secret-token");

  // Split mid-JSON, as a real API server's chunks may be.
  api.send_watch_event("ADDED", configmap("cm-b", "11", {{"k", "1"}}), 17);
  api.send_watch_event("MODIFIED", configmap("cm-a", "12", {{"k", "2"}}));
  auto first = await_notices(notices, 1, 10s);
  REQUIRE(first.size() == 1);
  CHECK(notice_lines(first[0]) ==
        std::vector<std::string>{"ADDED default/cm-b", "MODIFIED default/cm-a (data.k: 1→2)"});

  // 410 Gone: the source re-lists and reports what changed in the gap.
  api.set_collection(path, json::array({configmap("cm-a", "12", {{"k", "2"}})}), "20");
  api.fail_next_watch_with_gone(true);
  api.end_watch();
  auto gap = await_notices(notices, 1, 15s);
  REQUIRE(gap.size() == 1);
  CHECK(notice_lines(gap[0]) == std::vector<std::string>{"DELETED default/cm-b"});
  // The first watch, the one answered 410, and the one open now.
  REQUIRE(api.await_watches_opened(3, 10s));

  CHECK(stop_watch(ep, "cms"));
  CHECK(node.await_log("\"source.stopping\"", 5s));
  CHECK(api.await_watches_closed_by_client(1, 10s));
}
