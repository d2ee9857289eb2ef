// One SSE connection on two streams: the id carries both cursors, so a
// dropped connection resumes both streams losslessly from Last-Event-ID.

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/cursor.hpp"
#include "core/cursor_vector.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;

// Publishes `rounds` events on a and on b, interleaved; returns every cursor per stream.
void publish_interleaved(client::http_connection& conn, int first, int rounds,
                         std::map<std::string, std::vector<std::string>>& acked) {
  for (int i = first; i < first + rounds; ++i) {
    for (const char* stream : {"a", "b"}) {
      acked[stream].push_back(
          publish(conn, stream, event_json("/" + std::string(stream) + "/" + std::to_string(i), "ADDED", i)));
    }
  }
}

// Checks an event's positional id: its own stream's slot is its cursor, the
// other slot is where that stream stood, and neither goes backwards.
void check_ids(const std::vector<data_event>& events, std::vector<core::cursor>& position) {
  for (const auto& e : events) {
    INFO("event " << e.cursor << " on " << e.stream << " with id " << e.id);
    auto ids = core::decode_cursor_vector(e.id);
    REQUIRE(ids);
    REQUIRE(ids->size() == 2);
    const std::size_t own = e.stream == "a" ? 0 : 1;
    CHECK(core::format_cursor((*ids)[own]) == e.cursor);
    CHECK((*ids)[1 - own] == position[1 - own]);
    CHECK((*ids)[own].seq > position[own].seq);
    position = *ids;
  }
}

}  // namespace

TEST_CASE("a two-stream session resumes both streams from its last id", "[multi-stream]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--io-threads", "2"});
  auto ep = node.endpoint();
  client::http_connection conn(ep);
  std::map<std::string, std::vector<std::string>> acked;
  // Both streams exist before the session, so the hello has real heads.
  publish_interleaved(conn, 0, 1, acked);

  std::vector<data_event> delivered;
  std::string last_id;
  {
    client::sse_stream session(ep, sse_target({"a", "b"}));
    auto hello = await_hello(session);
    INFO("hello " << hello.dump());
    CHECK(hello["streams"]["a"] == acked["a"][0]);
    CHECK(hello["streams"]["b"] == acked["b"][0]);

    publish_interleaved(conn, 1, 5, acked);  // 10 events, a and b alternating
    auto got = collect_data_events(session, 6, 5s);
    INFO("ended " << to_string(got.ended));
    REQUIRE(got.events.size() == 6);
    std::vector<core::cursor> position = {cursor_of(acked["a"][0]), cursor_of(acked["b"][0])};
    check_ids(got.events, position);
    delivered = got.events;
    last_id = session.last_event_id();
    CHECK(last_id == got.events.back().id);
  }  // dropped mid-way: four of the ten are unread

  publish_interleaved(conn, 6, 5, acked);

  client::sse_stream resumed(ep, sse_target({"a", "b"}), {{"Last-Event-ID", last_id}});
  await_hello(resumed);
  auto rest = collect_data_events(resumed, 14, 5s);
  INFO("resumed session ended " << to_string(rest.ended));
  CHECK(rest.events.size() == 14);
  auto position = *core::decode_cursor_vector(last_id);
  check_ids(rest.events, position);
  delivered.insert(delivered.end(), rest.events.begin(), rest.events.end());

  // Nothing beyond: the next event on either stream is a fresh publish.
  auto sentinel = publish(conn, "b", event_json("/b/end", "ADDED", "end"));
  auto after = collect_data_events(resumed, 1, 5s);
  REQUIRE(after.events.size() == 1);
  CHECK(after.events[0].cursor == sentinel);

  // Every event after the session's start, of both streams, exactly once, in per-stream order.
  std::map<std::string, std::vector<std::string>> per_stream;
  for (const auto& e : delivered) per_stream[e.stream].push_back(e.cursor);
  CHECK(per_stream["a"] == std::vector<std::string>(acked["a"].begin() + 1, acked["a"].end()));
  CHECK(per_stream["b"] == std::vector<std::string>(acked["b"].begin() + 1, acked["b"].end()));
  CHECK(per_stream.size() == 2);
}

TEST_CASE("a two-stream session on streams that do not exist yet", "[multi-stream]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  client::sse_stream session(ep, sse_target({"x", "y"}));
  auto hello = await_hello(session);
  CHECK(hello["streams"]["x"] == "0000000000000000:0");
  CHECK(hello["streams"]["y"] == "0000000000000000:0");

  auto y1 = publish(ep, "y", event_json("/", "ADDED", 1));
  auto got = collect_data_events(session, 1, 5s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].cursor == y1);
  auto ids = core::decode_cursor_vector(got.events[0].id);
  REQUIRE(ids);
  REQUIRE(ids->size() == 2);
  CHECK(core::format_cursor((*ids)[0]) == "0000000000000000:0");
  CHECK(core::format_cursor((*ids)[1]) == y1);
}
