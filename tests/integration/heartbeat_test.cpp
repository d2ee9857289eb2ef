// An idle session is kept alive by heartbeats that carry the session's position.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;

// Next message, which must be a heartbeat; returns its data.
nlohmann::json await_heartbeat(client::sse_stream& session, std::chrono::milliseconds timeout) {
  core::sse_message m;
  REQUIRE(session.next(m, timeout) == client::sse_stream::result::message);
  INFO("got event '" << m.event << "': " << m.data);
  REQUIRE(m.event == "heartbeat");
  return message_json(m);
}

}  // namespace

TEST_CASE("an idle session gets heartbeats carrying its last id", "[heartbeat]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--heartbeat-ms", "200"});
  auto ep = node.endpoint();
  auto first = publish(ep, "docs", event_json("/a", "ADDED", 1));

  client::sse_stream session(ep, sse_target({"docs"}));
  auto hello = await_hello(session);
  CHECK(hello["heartbeat_ms"] == 200);

  // Before any event on this session, the position is where it started.
  auto before = await_heartbeat(session, 2s);
  CHECK(before["cursor"] == first);

  auto second = publish(ep, "docs", event_json("/b", "ADDED", 2));
  auto got = collect_data_events(session, 1, 5s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].id == second);

  // Heartbeat period 200 ms: two within 2 s, each with the last id.
  for (int i = 0; i < 2; ++i) {
    auto beat = await_heartbeat(session, 2s);
    CHECK(beat["cursor"] == session.last_event_id());
    CHECK(beat["cursor"] == second);
  }
}

TEST_CASE("a two-stream session's heartbeat carries the cursor vector", "[heartbeat]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--heartbeat-ms", "200"});
  auto ep = node.endpoint();
  auto a = publish(ep, "a", event_json("/", "ADDED", 1));
  auto b = publish(ep, "b", event_json("/", "ADDED", 1));

  client::sse_stream session(ep, sse_target({"a", "b"}));
  await_hello(session);
  auto b2 = publish(ep, "b", event_json("/", "ADDED", 2));
  auto got = collect_data_events(session, 1, 5s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].cursor == b2);

  auto beat = await_heartbeat(session, 2s);
  CHECK(beat["cursor"] == session.last_event_id());
  CHECK(beat["cursor"] == a + "," + b2);
}
