// GET /metrics against the real tidingsd (issue 8): the text parses with the
// Prometheus project's own parser, every family the runbook lists is there
// with its type, and the counters move as publishes, deliveries, resyncs
// and upstream fires happen. Watch fires also leave audit lines.

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/cursor.hpp"
#include "tests/support/metrics_scrape.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The families docs/operations.md documents, by the parser's family name
// (a counter's family drops its _total) and type.
const std::map<std::string, std::string> documented = {
    {"tidings_sse_sessions", "gauge"},
    {"tidings_sse_sessions_opened", "counter"},
    {"tidings_events_published", "counter"},
    {"tidings_events_delivered", "counter"},
    {"tidings_publish_duration_seconds", "histogram"},
    {"tidings_delivery_lag_seconds", "histogram"},
    {"tidings_resync", "counter"},
    {"tidings_unauthorized", "counter"},
    {"tidings_watch_active_watchers", "gauge"},
    {"tidings_watch_fired", "counter"},
    {"tidings_watch_notifications_sent", "counter"},
    {"tidings_watch_poll_failures", "counter"},
    {"tidings_source_resubscribes", "counter"},
    {"tidings_source_failures", "counter"},
    {"tidings_filter_errors", "counter"},
    {"tidings_hub_ring_bytes", "gauge"},
    {"tidings_storage_sst_bytes", "gauge"},
    {"tidings_storage_live_data_bytes", "gauge"},
    {"tidings_storage_memtable_bytes", "gauge"},
    {"tidings_storage_pending_compaction_bytes", "gauge"},
    {"tidings_storage_write_stopped", "gauge"},
    {"tidings_storage_delayed_write_rate_bytes", "gauge"},
    {"tidings_storage_flush_pending", "gauge"},
    {"tidings_storage_running_flushes", "gauge"},
    {"tidings_storage_running_compactions", "gauge"},
    {"tidings_cluster_members", "gauge"},
    {"tidings_relay_feeds", "gauge"},
};

std::vector<json> audit_lines(const std::filesystem::path& file, const std::string& action) {
  std::vector<json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("action", "") == action) out.push_back(j);
  }
  return out;
}

}  // namespace

TEST_CASE("/metrics parses as Prometheus text and lists every documented family", "[metrics]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto m = scrape_metrics(node.endpoint());
  for (const auto& [name, type] : documented) {
    INFO(name);
    REQUIRE(m.families.contains(name));
    CHECK(m.families.at(name) == type);
  }
  // Nothing labelled by stream, session or subject: bounded cardinality.
  for (const auto& s : m.samples)
    for (const auto& [label, value] : s.labels) {
      INFO(s.name << "{" << label << "=" << value << "}");
      CHECK((label == "stream_kind" || label == "reason" || label == "strategy" || label == "state" ||
             label == "le"));
    }
  CHECK(m.value("tidings_cluster_members", {{"state", "alive"}}) == 1);
  CHECK(m.value("tidings_storage_write_stopped") == 0);
  CHECK(m.value("tidings_sse_sessions") == 0);
  CHECK(client::request(node.endpoint(), "POST", "/metrics").status == 405);
}

TEST_CASE("metrics move as publishes, deliveries and resyncs happen", "[metrics]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto before = scrape_metrics(ep);

  auto session = std::make_unique<client::sse_stream>(ep, sse_target({"orders"}));
  await_hello(*session);
  auto cursors = publish_batch(ep, "orders",
                               "[" + event_json("/o/1", "created", {{"n", 1}}) + "," +
                                   event_json("/o/2", "created", {{"n", 2}}) + "," +
                                   event_json("/o/3", "created", {{"n", 3}}) + "]");
  REQUIRE(cursors.size() == 3);
  auto got = collect_data_events(*session, 3, 10s);
  REQUIRE(got.events.size() == 3);

  // Counted before the publish's reply and before each write, so the scrape
  // after them sees them.
  auto m = scrape_metrics(ep);
  CHECK(m.value_or_zero("tidings_events_published_total", {{"stream_kind", "stream"}}) -
            before.value_or_zero("tidings_events_published_total", {{"stream_kind", "stream"}}) ==
        3);
  CHECK(m.value_or_zero("tidings_publish_duration_seconds_count") -
            before.value_or_zero("tidings_publish_duration_seconds_count") ==
        1);
  CHECK(m.value_or_zero("tidings_events_delivered_total") == 3);
  CHECK(m.value_or_zero("tidings_delivery_lag_seconds_count") >= 1);
  CHECK(m.value("tidings_sse_sessions") == 1);
  CHECK(m.value("tidings_sse_sessions_opened_total") == 1);
  CHECK(m.value("tidings_relay_feeds") == 1);
  CHECK(m.value_or_zero("tidings_hub_ring_bytes") > 0);

  // A resume from another epoch of the stream ends with resync: epoch_changed.
  auto c = cursor_of(cursors[0]);
  c.epoch ^= 1;
  {
    client::sse_stream stale(ep, sse_target({"orders"}),
                             client::header_list{{"Last-Event-ID", core::format_cursor(c)}});
    REQUIRE(stale.status() == 200);
    for (;;) {
      auto msg = next_non_heartbeat(stale, 5s);
      REQUIRE(msg);
      if (msg->event == "hello") continue;
      REQUIRE(msg->event == "resync");
      break;
    }
  }
  m = scrape_metrics(ep);
  CHECK(m.value_or_zero("tidings_resync_total", {{"reason", "epoch_changed"}}) == 1);
  CHECK(m.value("tidings_sse_sessions_opened_total") == 2);

  // Sessions leave the gauge, and the last one on a stream its feed, as
  // soon as the node notices the hang-up.
  session.reset();
  m = await_metrics(
      ep,
      [](const scraped_metrics& s) {
        return s.value("tidings_sse_sessions") == 0 && s.value("tidings_relay_feeds") == 0;
      },
      10s);
  CHECK(m.value("tidings_sse_sessions") == 0);
  CHECK(m.value("tidings_relay_feeds") == 0);
}

TEST_CASE("an upstream fire counts by strategy and leaves an audit line with its subscribers",
          "[metrics][sources][file]") {
  temp_dir dir;
  auto file = write_watched_file(dir.path(), R"({"replicas":1})");
  auto root = file.parent_path();
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n  files:\n    roots: [" << root.string() << "]\n";
  auto data = dir.path() / "data";
  tidingsd_process node(data, {"--config", cfg.string()});
  auto ep = node.endpoint();
  auto uri = "file://" + file.string();

  client::sse_stream a(ep, "/v1/sse?uri=" + client::url_encode(uri));
  await_hello(a);
  client::sse_stream b(ep, "/v1/sse?uri=" + client::url_encode(uri));
  await_hello(b);
  auto m = scrape_metrics(ep);
  CHECK(m.value("tidings_watch_active_watchers", {{"strategy", "inotify"}}) == 1);

  replace_file(file, R"({"replicas":2})");
  auto got = collect_data_events(a, 1, 10s);
  REQUIRE(got.events.size() == 1);
  // The fire is counted when the signal arrives, the notification when its
  // read is stored; both happen before the event reaches a session.
  m = scrape_metrics(ep);
  CHECK(m.value_or_zero("tidings_watch_fired_total", {{"strategy", "inotify"}}) >= 1);
  CHECK(m.value_or_zero("tidings_watch_notifications_sent_total", {{"strategy", "inotify"}}) >= 1);
  CHECK(m.value_or_zero("tidings_events_published_total", {{"stream_kind", "source"}}) >= 1);

  auto fired = audit_lines(data / "audit.ndjson", "watch.fired");
  REQUIRE(!fired.empty());
  CHECK(fired.back()["uri"] == uri);
  CHECK(fired.back()["strategy"] == "inotify");
  CHECK(fired.back()["subscribers"] == 2);
  CHECK(fired.back()["tenant"] == "default");
}

TEST_CASE("a filter error counts in tidings_filter_errors_total", "[metrics][watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish_state(ep, "memo", "/notes", json::object());
  start_watch_ok(ep, {{"name", "notes"},
                      {"uri", "stream://memo/notes"},
                      {"debounce_ms", 0},
                      {"on_event", "if event.key == 'boom' then error('no') end return event.key"}});
  client::sse_stream notices(ep, sse_target({"watch:notes"}));
  await_hello(notices);
  publish_state(ep, "memo", "/notes", {{"boom", 1}});
  REQUIRE(await_notices(notices, 1, 10s).size() == 1);
  // The notice is published after the filter counted its error.
  CHECK(scrape_metrics(ep).value("tidings_filter_errors_total") == 1);
}

TEST_CASE("with tenants, /metrics is for operators and counts refused tokens and ended sessions by reason",
          "[metrics][security]") {
  tenant_node node;
  auto ep = node.endpoint();
  auto ops = node.token(token_spec().tenant("ops").sub("oncall").admin(true));
  auto acme_admin = node.token(token_spec().sub("boss").admin(true));

  CHECK(client::request(ep, "GET", "/metrics").status == 401);
  CHECK(client::request(ep, "GET", "/metrics", {}, bearer(acme_admin)).status == 403);
  auto forged = node.token(token_spec()) + "x";
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(forged)).status == 401);
  auto expired = node.token(token_spec().ttl_s(-120));
  CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(expired)).status == 401);

  auto m = scrape_metrics(ep, ops);
  CHECK(m.value_or_zero("tidings_unauthorized_total", {{"reason", "signature"}}) == 1);
  CHECK(m.value_or_zero("tidings_unauthorized_total", {{"reason", "expired"}}) == 1);

  // A revoked token's live session ends with `unauthorized`: counted as revoked.
  client::sse_stream session(ep, sse_target({"docs"}),
                             bearer(node.token(token_spec().sub("ann").jti("t-1"))));
  await_hello(session);
  REQUIRE(post_json(ep, acme_admin, "/admin/v1/tokens/revoke", R"({"jti":"t-1"})").status == 200);
  auto end = next_non_heartbeat(session, 5s);
  REQUIRE(end);
  CHECK(end->event == "unauthorized");
  m = scrape_metrics(ep, ops);
  CHECK(m.value_or_zero("tidings_unauthorized_total", {{"reason", "revoked"}}) == 1);
}
