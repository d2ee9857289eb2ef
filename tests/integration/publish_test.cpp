// Publish and live delivery: what a publisher is told is what a watcher gets.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/cursor.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

}  // namespace

TEST_CASE("a live SSE session receives a publish with the acknowledged cursor", "[publish]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  client::sse_stream session(ep, sse_target({"docs"}));
  REQUIRE(session.status() == 200);
  CHECK(session.content_type().find("text/event-stream") == 0);
  auto hello = await_hello(session);
  INFO("hello: " << hello.dump());
  REQUIRE(hello.contains("streams"));
  // The stream does not exist yet: its head is "before anything".
  CHECK(hello["streams"]["docs"] == "0000000000000000:0");
  CHECK(hello["heartbeat_ms"].is_number_integer());

  const json data = {{"title", "A"}, {"n", 1}, {"nested", {1, 2, json::object()}}};
  auto cursor = publish(ep, "docs", event_json("/a.md", "MODIFIED", data));
  auto acked = cursor_of(cursor);
  CHECK(acked.seq == 1);
  CHECK(acked.epoch != 0);

  auto got = collect_data_events(session, 1, 5s);
  INFO("ended: " << to_string(got.ended));
  REQUIRE(got.events.size() == 1);
  const auto& e = got.events[0];
  CHECK(e.id == cursor);
  CHECK(e.cursor == cursor);
  CHECK(e.stream == "docs");
  CHECK(e.path == "/a.md");
  CHECK(e.type == "MODIFIED");
  CHECK(e.data == data);
  CHECK(e.raw["time"].is_number_integer());
  CHECK(session.last_event_id() == cursor);
}

TEST_CASE("publish replies {cursor} for one event and {cursors} in order for an array", "[publish]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  const client::header_list json_type{{"Content-Type", "application/json"}};

  auto single = client::request(ep, "POST", events_target("docs"), event_json("/one", "ADDED", 1), json_type);
  REQUIRE(single.status == 201);
  auto single_body = parse_body(single);
  INFO("single reply: " << single.body);
  REQUIRE(single_body["cursor"].is_string());
  CHECK_FALSE(single_body.contains("cursors"));
  auto first = cursor_of(single_body["cursor"].get<std::string>());
  CHECK(first.seq == 1);

  const std::string array = "[" + event_json("/two", "ADDED", 2) + "," + event_json("/three", "ADDED", 3) +
                            "," + event_json("/four", "ADDED", 4) + "]";
  auto batch = client::request(ep, "POST", events_target("docs"), array, json_type);
  REQUIRE(batch.status == 201);
  auto batch_body = parse_body(batch);
  INFO("array reply: " << batch.body);
  REQUIRE(batch_body["cursors"].is_array());
  CHECK_FALSE(batch_body.contains("cursor"));
  REQUIRE(batch_body["cursors"].size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    auto c = cursor_of(batch_body["cursors"][i].get<std::string>());
    CHECK(c.epoch == first.epoch);
    CHECK(c.seq == first.seq + 1 + i);
  }

  // A one-element array is still an array: the reply shape follows the request.
  auto one_array = client::request(ep, "POST", events_target("docs"),
                                   "[" + event_json("/five", "ADDED", 5) + "]", json_type);
  REQUIRE(one_array.status == 201);
  auto one_array_body = parse_body(one_array);
  REQUIRE(one_array_body["cursors"].is_array());
  CHECK(one_array_body["cursors"].size() == 1);

  // Defaults: path "/", type CHANGED, data null.
  auto bare = publish(ep, "docs", "{}");
  auto history = read_history(ep, "docs");
  REQUIRE(history.size() == 6);
  const char* paths[] = {"/one", "/two", "/three", "/four", "/five", "/"};
  for (std::size_t i = 0; i < history.size(); ++i) {
    CHECK(history[i]["path"] == paths[i]);
    CHECK(cursor_of(history[i]["cursor"].get<std::string>()).seq == i + 1);
  }
  CHECK(history[5]["cursor"] == bare);
  CHECK(history[5]["type"] == "CHANGED");
  CHECK(history[5]["data"].is_null());
}

TEST_CASE("stream listing and health describe a published stream", "[publish]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--retention-events", "50"});
  auto ep = node.endpoint();

  auto health = client::request(ep, "GET", "/healthz");
  CHECK(health.status == 200);
  CHECK(parse_body(health) == json{{"status", "ok"}});
  CHECK(client::request(ep, "GET", "/readyz").status == 200);

  auto first = publish(ep, "docs", event_json("/a", "ADDED", 1));
  auto last = publish(ep, "docs", event_json("/b", "ADDED", 2));

  auto one = client::request(ep, "GET", "/v1/streams/docs");
  REQUIRE(one.status == 200);
  auto stream = parse_body(one);
  INFO("stream: " << stream.dump());
  CHECK(stream["name"] == "docs");
  CHECK(stream["epoch"] == core::format_epoch(cursor_of(first).epoch));
  CHECK(stream["head"] == last);
  CHECK(stream["first"] == first);
  CHECK(stream["events"] == 2);
  CHECK(stream["retention"]["events"] == 50);
  CHECK(stream["retention"]["age_ms"].is_number_integer());

  auto all = client::request(ep, "GET", "/v1/streams");
  REQUIRE(all.status == 200);
  auto listing = parse_body(all);
  INFO("listing: " << listing.dump());
  REQUIRE(listing["streams"].is_array());
  REQUIRE(listing["streams"].size() == 1);
  CHECK(listing["streams"][0] == stream);
}
