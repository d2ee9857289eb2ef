// Issue 28: memory grew with every stream ever published (about 4.6 KB a
// stream, never returned). Streams created and left idle have their hubs
// released after the idle time (counted by the node), and come back from
// the store on demand with their history and cursors. Here under the
// sanitizers with 400 streams; the 20 000 of the issue, with RSS, are the
// release build's load_idle_streams (tidings-load --scenario idle-streams).

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/metrics_scrape.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;

}  // namespace

TEST_CASE("idle streams leave memory after the idle time and come back on demand", "[idle-streams]") {
  constexpr int streams = 400;
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--stream-idle-ms", "1000", "--durability", "none"});
  auto ep = node.endpoint();

  // Two connections in parallel: the node's hubs, not the client, set the pace.
  std::vector<std::string> first_cursor(2);
  auto create = [&](int part) {
    client::http_connection conn(ep);
    for (int i = part; i < streams; i += 2) {
      auto cursor = publish(conn, "idle-" + std::to_string(i), event_json("/e", "ADDED", i));
      if (i < 2) first_cursor[i] = cursor;
    }
  };
  std::thread other(create, 1);
  create(0);
  other.join();

  auto released = [](const scraped_metrics& m) {
    return m.value_or_zero("tidings_streams_released_total", {{"reason", "idle"}});
  };
  auto m = await_metrics(
      ep, [&](const scraped_metrics& s) { return released(s) >= streams; }, 30s);
  CHECK(released(m) == streams);

  // A released stream is back on the next request, whole.
  auto history = read_history(ep, "idle-0");
  REQUIRE(history.size() == 1);
  CHECK(history[0]["cursor"] == first_cursor[0]);
  client::sse_stream session(ep, sse_target({"idle-1"}) + "&since=0000000000000000:0");
  await_hello(session);
  auto seen = collect_data_events(session, 1, 5s);
  REQUIRE(seen.events.size() == 1);
  CHECK(seen.events[0].cursor == first_cursor[1]);
  auto next = publish(ep, "idle-1", event_json("/e", "ADDED", -1));
  CHECK(next.substr(0, next.find(':')) == first_cursor[1].substr(0, first_cursor[1].find(':')));
  CHECK(next.substr(next.find(':') + 1) == "2");
}
