// Age retention: events older than --retention-age-ms are trimmed by a timer
// (no publish needed), a resume from before them gets a typed resync, and the
// stream keeps working afterwards.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

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

json stream_info(const client::endpoint& ep, const std::string& stream) {
  auto r = client::request(ep, "GET", "/v1/streams/" + stream);
  INFO("GET /v1/streams/" << stream << ": " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  return parse_body(r);
}

}  // namespace

TEST_CASE("events older than --retention-age-ms are trimmed without further publishes", "[retention]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--retention-age-ms", "1500", "--verbose"});
  auto ep = node.endpoint();
  const std::string stream = "aged";

  std::vector<std::string> cursors;
  {
    client::http_connection conn(ep);
    for (int i = 1; i <= 3; ++i) cursors.push_back(publish(conn, stream, event_json("/e", "ADDED", i)));
  }
  const auto head = cursors.back();
  const auto epoch = cursor_of(head).epoch;

  // The events may be published in different milliseconds, so the trim may
  // come in more than one step: the first step is logged, and the last one
  // leaves the first retained seq at 4 (one past the head).
  const bool trimmed = node.await_log("\"event\":\"stream.trimmed\"", 10s);
  const bool trimmed_all =
      trimmed && node.await_log("\"event\":\"stream.trimmed\",\"stream\":\"aged\",\"first_seq\":4", 10s);
  INFO("node log:\n" << node.log());
  REQUIRE(trimmed);
  REQUIRE(trimmed_all);

  auto info = stream_info(ep, stream);
  INFO("stream: " << info.dump());
  CHECK(info["events"] == 0);
  CHECK(info["head"] == head);
  CHECK(info["first"] == core::format_cursor({epoch, 4}));
  CHECK(info["retention"]["age_ms"] == 1500);

  // History is empty but the stream is still there.
  auto history = client::request(ep, "GET", events_target(stream));
  INFO("history: " << history.body);
  REQUIRE(history.status == 200);
  CHECK(parse_body(history)["events"].empty());

  // A resume from the first (trimmed) event cannot be lossless.
  {
    client::sse_stream session(ep, sse_target({stream}), {{"Last-Event-ID", cursors[0]}});
    REQUIRE(session.status() == 200);
    std::optional<core::sse_message> m;
    for (;;) {
      m = next_non_heartbeat(session, 5s);
      REQUIRE(m);
      if (m->event != "hello") break;
    }
    INFO("event '" << m->event << "': " << m->data);
    REQUIRE(m->event == "resync");
    auto data = message_json(*m);
    CHECK(data["stream"] == stream);
    CHECK(data["reason"] == "cursor_too_old");
    CHECK(data["head"] == head);
    core::sse_message extra;
    CHECK(session.next(extra, 5s) == client::sse_stream::result::closed);
  }
  {
    auto r = client::request(ep, "GET", events_target(stream) + "?since=" + client::url_encode(cursors[0]));
    INFO("history since the first cursor: " << r.status << " " << r.body);
    CHECK(r.status == 410);
    CHECK(parse_body(r)["reason"] == "cursor_too_old");
  }

  // The stream goes on: a live session gets the next publish, and history has
  // it. History is read right after the publish reply, well inside the 1500 ms
  // it stays retained.
  client::sse_stream live(ep, sse_target({stream}));
  auto hello = await_hello(live);
  CHECK(hello["streams"][stream] == head);

  client::http_connection conn(ep);
  const auto before_publish = std::chrono::steady_clock::now();
  auto next = publish(conn, stream, event_json("/after", "ADDED", json{{"n", 4}}));
  auto after = conn.request("GET", events_target(stream));
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - before_publish);
  INFO("publish + history took " << elapsed.count() << " ms; history: " << after.body);
  CHECK(cursor_of(next).epoch == epoch);
  CHECK(cursor_of(next).seq == 4);
  REQUIRE(after.status == 200);
  auto page = parse_body(after);
  REQUIRE(page["events"].size() == 1);
  CHECK(page["events"][0]["cursor"] == next);
  CHECK(page["events"][0]["path"] == "/after");
  CHECK(page["first"] == next);
  CHECK(page["head"] == next);

  auto got = collect_data_events(live, 1, 5s);
  INFO("ended: " << to_string(got.ended));
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].id == next);
  CHECK(got.events[0].path == "/after");
  CHECK(got.events[0].data == json{{"n", 4}});
}
