#include "broker/metrics.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/tidingsd_process.hpp"

using namespace tidings;

namespace {

std::unique_ptr<persistence::store> open_store(const testing::temp_dir& dir) {
  std::unique_ptr<persistence::store> db;
  auto s = persistence::store::open((dir.path() / "db").string(), persistence::durability::none, &db);
  INFO(s.message());
  REQUIRE(s.ok());
  return db;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("each probe's events show in the scrape, with bounded labels") {
  testing::temp_dir dir;
  auto db = open_store(dir);
  std::vector<std::string> audited;
  broker::metrics m(*db, [&](std::string_view event, const nlohmann::json& fields) {
    audited.push_back(std::string(event) + " " + fields.dump());
  });

  m.hubs().published("orders", 3);
  m.hubs().published("watch:notes", 1);
  m.hubs().published("src:abc", 2);
  m.hubs().publish_duration(std::chrono::milliseconds(2));
  m.hubs().ring_bytes(500);
  m.hubs().ring_bytes(-200);
  m.relay().session_opened();
  m.relay().session_opened();
  m.relay().session_closed();
  m.relay().delivered(7);
  m.relay().resync("slow_consumer");
  m.relay().unauthorized("revoked");
  {
    sources::probe::active_watcher w(m.sources(), "inotify");
    m.sources().fired("inotify", "acme", "file:///etc/app.json", 2);
    auto text = m.scrape();
    CHECK(has_line(text, R"(tidings_watch_active_watchers{strategy="inotify"} 1)"));
  }

  auto text = m.scrape();
  CHECK(has_line(text, R"(tidings_events_published_total{stream_kind="stream"} 3)"));
  CHECK(has_line(text, R"(tidings_events_published_total{stream_kind="watch"} 1)"));
  CHECK(has_line(text, R"(tidings_events_published_total{stream_kind="source"} 2)"));
  CHECK(has_line(text, "tidings_publish_duration_seconds_count 1"));
  CHECK(has_line(text, "tidings_hub_ring_bytes 300"));
  CHECK(has_line(text, "tidings_sse_sessions 1"));
  CHECK(has_line(text, "tidings_sse_sessions_opened_total 2"));
  CHECK(has_line(text, "tidings_events_delivered_total 7"));
  CHECK(has_line(text, R"(tidings_resync_total{reason="slow_consumer"} 1)"));
  CHECK(has_line(text, R"(tidings_resync_total{reason="epoch_changed"} 0)"));
  CHECK(has_line(text, R"(tidings_unauthorized_total{reason="revoked"} 1)"));
  // The watcher left the gauge with its scope.
  CHECK(has_line(text, R"(tidings_watch_active_watchers{strategy="inotify"} 0)"));
  CHECK(has_line(text, R"(tidings_watch_fired_total{strategy="inotify"} 1)"));
  CHECK(has_line(text, R"(tidings_cluster_members{state="alive"} 1)"));
  CHECK(text.find("tidings_storage_sst_bytes ") != std::string::npos);
  CHECK(has_line(text, "tidings_storage_write_stopped 0"));
  CHECK(text.find("# TYPE tidings_delivery_lag_seconds histogram") != std::string::npos);

  REQUIRE(audited.size() == 1);
  CHECK(audited[0].find("watch.fired") == 0);
  CHECK(audited[0].find("\"subscribers\":2") != std::string::npos);
}

TEST_CASE("a label value outside the known set still counts") {
  testing::temp_dir dir;
  auto db = open_store(dir);
  broker::metrics m(*db, {});
  m.relay().resync("owner_changed");
  m.relay().resync("owner_changed");
  CHECK(has_line(m.scrape(), R"(tidings_resync_total{reason="owner_changed"} 2)"));
}

TEST_CASE("a stream's kind is read from its name") {
  CHECK(actors::probe::stream_kind("orders") == "stream");
  CHECK(actors::probe::stream_kind("watch:notes") == "watch");
  CHECK(actors::probe::stream_kind("src:1f2e") == "source");
  CHECK(actors::probe::stream_kind("watchful") == "stream");
}
