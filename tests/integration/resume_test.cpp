// Resuming a session: from Last-Event-ID or `since`, exactly the events after
// the cursor and then live ones; prefix subscriptions see only their paths.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;

std::vector<std::string> publish_numbered(const client::endpoint& ep, int from, int to) {
  client::http_connection conn(ep);
  std::vector<std::string> cursors;
  for (int i = from; i <= to; ++i)
    cursors.push_back(publish(conn, "docs", event_json("/n/" + std::to_string(i), "ADDED", i)));
  return cursors;
}

std::vector<std::string> cursors_of(const std::vector<data_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.cursor);
  return out;
}

std::vector<std::string> paths_of(const std::vector<data_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.path);
  return out;
}

}  // namespace

TEST_CASE("resume with Last-Event-ID delivers exactly the later events then live ones", "[resume]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto cursors = publish_numbered(ep, 1, 10);
  const std::vector<std::string> after_fourth(cursors.begin() + 4, cursors.end());

  client::sse_stream session(ep, sse_target({"docs"}), {{"Last-Event-ID", cursors[3]}});
  auto hello = await_hello(session);
  CHECK(hello["streams"]["docs"] == cursors[9]);

  auto replay = collect_data_events(session, 6, 5s);
  INFO("ended " << to_string(replay.ended));
  CHECK(cursors_of(replay.events) == after_fourth);
  for (std::size_t i = 0; i < replay.events.size(); ++i) {
    CHECK(replay.events[i].id == replay.events[i].cursor);
    CHECK(replay.events[i].data == static_cast<int>(i) + 5);
  }

  auto live = publish(ep, "docs", event_json("/n/11", "ADDED", 11));
  auto next = collect_data_events(session, 1, 5s);
  REQUIRE(next.events.size() == 1);
  CHECK(next.events[0].cursor == live);
  CHECK(cursor_of(live).seq == 11);
}

TEST_CASE("resume with the since parameter and Last-Event-ID taking precedence", "[resume]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto cursors = publish_numbered(ep, 1, 10);

  SECTION("since alone") {
    client::sse_stream session(ep, sse_target({"docs"}, cursors[3]));
    await_hello(session);
    auto replay = collect_data_events(session, 6, 5s);
    CHECK(cursors_of(replay.events) == std::vector<std::string>(cursors.begin() + 4, cursors.end()));
    auto live = publish(ep, "docs", event_json("/n/11", "ADDED", 11));
    auto next = collect_data_events(session, 1, 5s);
    REQUIRE(next.events.size() == 1);
    CHECK(next.events[0].cursor == live);
  }

  SECTION("Last-Event-ID wins over since") {
    client::sse_stream session(ep, sse_target({"docs"}, cursors[3]), {{"Last-Event-ID", cursors[7]}});
    await_hello(session);
    auto live = publish(ep, "docs", event_json("/n/11", "ADDED", 11));
    auto got = collect_data_events(session, 3, 5s);
    CHECK(cursors_of(got.events) == std::vector<std::string>{cursors[8], cursors[9], live});
  }

  SECTION("resuming from the head delivers only live events") {
    client::sse_stream session(ep, sse_target({"docs"}, cursors[9]));
    await_hello(session);
    auto live = publish(ep, "docs", event_json("/n/11", "ADDED", 11));
    auto got = collect_data_events(session, 1, 5s);
    REQUIRE(got.events.size() == 1);
    CHECK(got.events[0].cursor == live);
  }
}

TEST_CASE("a prefix subscription only gets paths under its prefix", "[resume][prefix]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto start = publish(ep, "docs", event_json("/a/0", "ADDED", 0));

  client::sse_stream live_session(ep, sse_target({"docs:/a/"}));
  await_hello(live_session);

  const std::vector<std::string> published_paths = {"/a/1", "/b/1", "/a/2", "/ab/3", "/a/sub/4", "/", "/a"};
  for (const auto& p : published_paths) publish(ep, "docs", event_json(p, "ADDED", p));
  // Delivery follows cursor order, so anything filtered wrongly would come before this.
  auto sentinel = publish(ep, "docs", event_json("/a/end", "ADDED", "end"));
  const std::vector<std::string> wanted = {"/a/1", "/a/2", "/a/sub/4", "/a/end"};

  auto live = collect_data_events(live_session, wanted.size(), 5s);
  CHECK(paths_of(live.events) == wanted);
  REQUIRE_FALSE(live.events.empty());
  CHECK(live.events.back().cursor == sentinel);

  // The same filter applies to a replay.
  client::sse_stream replay_session(ep, sse_target({"docs:/a/"}, start));
  await_hello(replay_session);
  auto replay = collect_data_events(replay_session, wanted.size(), 5s);
  CHECK(paths_of(replay.events) == wanted);

  // And to the history read.
  auto r = client::request(
      ep, "GET",
      events_target("docs") + "?prefix=" + client::url_encode("/a/") + "&since=" + client::url_encode(start));
  REQUIRE(r.status == 200);
  auto body = parse_body(r);
  std::vector<std::string> history_paths;
  for (const auto& e : body["events"]) history_paths.push_back(e["path"].get<std::string>());
  CHECK(history_paths == wanted);
}
