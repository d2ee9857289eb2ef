// A watch is reachable from every member: started through one node, it is
// listed and read through the others, its notices reach a session on any
// node, a replace through another node lands where it runs, and a stop
// through any node ends it. It runs on exactly one node throughout.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/placement.hpp"
#include "tests/cluster/cluster_watches.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;
using lines = std::vector<std::string>;

}  // namespace

TEST_CASE(
    "a watch started on one member is listed, read, notified, replaced and stopped through the others, "
    "and runs on exactly one node",
    "[cluster][watch]") {
  cluster_nodes cluster(3);
  const auto node1 = cluster.endpoint(0);
  const auto node2 = cluster.endpoint(1);
  const auto node3 = cluster.endpoint(2);

  // A new watch is placed as its notice stream watch:w1 is; the stream it
  // reads is chosen on another node, so that the watch has to read (and
  // take its baseline of) a stream it does not hold. With "orders" itself
  // that would depend on the nodes' random ids.
  const auto ids = cluster.ids();
  const auto placed = core::owner_of(ids, "default", "watch:w1");
  const auto placed_at = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), placed) - ids.begin());
  const auto orders = cluster.owned_stream((placed_at + 1) % cluster.size(), "orders");
  const auto uri = "stream://" + orders;
  INFO("watch:w1 is placed on node " << placed_at + 1 << ", " << orders << " on node "
                                     << (placed_at + 1) % cluster.size() + 1);

  // The watched stream exists before the watch takes its baseline.
  publish(node1, orders, event_json("/o/0", "ADDED", json{{"id", 0}}));
  const json spec{{"name", "w1"}, {"uri", uri}, {"debounce_ms", 50}, {"max_wait_ms", 100}};
  auto created = start_watch(node1, spec);
  INFO("POST /v1/watches on node 1: " << created.status << " " << created.body);
  REQUIRE(created.status == 201);
  // The shape of the newest read: the baseline saw the event published above.
  CHECK(parse_body(created) == json{{"name", "w1"}, {"uri", uri}, {"shape", "events"}});

  // Listed once through node 3, however many members were asked.
  auto listed = rows_named(list_watches(node3), "w1");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["uri"] == uri);
  CHECK(listed[0]["state"] == "running");

  auto one = client::request(node2, "GET", "/v1/watches/w1");
  INFO("GET /v1/watches/w1 on node 2: " << one.status << " " << one.body);
  REQUIRE(one.status == 200);
  CHECK(parse_body(one)["name"] == "w1");
  CHECK(parse_body(one)["uri"] == uri);

  // A notice reaches a session on node 2 for an event published on node 3.
  client::sse_stream notices(node2, sse_target({"watch:w1"}));
  await_hello(notices);
  publish(node3, orders, event_json("/o/1", "ADDED", json{{"id", 1}}));
  auto got = collect_data_events(notices, 1, 10s);
  INFO(
      "notice session ended: " << to_string(got.ended)
                               << (got.control ? " by " + got.control->event + " " + got.control->data : ""));
  REQUIRE(got.ended == collected::end::count_reached);
  CHECK(got.events[0].stream == "watch:w1");
  CHECK(got.events[0].type == "NOTICE");
  CHECK(got.events[0].data["watch"] == "w1");
  // Only what changed since the watch started: /o/0 was in its baseline.
  CHECK(notice_lines(got.events[0]) == lines{"ADDED /o/1"});

  // Exactly one node runs it.
  auto counts = await_watch_total(cluster, 0, 1);
  INFO("watch counts after the start: " << describe(counts));
  REQUIRE(counts.size() == cluster.size());
  const auto holder = running_on(counts);
  REQUIRE(!holder.empty());

  // The same name through node 2 with another debounce replaces it where it runs.
  auto replaced =
      start_watch(node2, json{{"name", "w1"}, {"uri", uri}, {"debounce_ms", 80}, {"max_wait_ms", 100}});
  INFO("POST /v1/watches (replace) on node 2: " << replaced.status << " " << replaced.body);
  REQUIRE(replaced.status == 200);
  CHECK(parse_body(replaced)["name"] == "w1");
  CHECK(rows_named(list_watches(node1), "w1").size() == 1);
  // A replace that left a second copy running anywhere keeps the total at
  // 2 and fails here; the counts settle on 1, on the same node.
  counts = await_watch_total(cluster, 2, 1);
  INFO("watch counts after the replace: " << describe(counts));
  CHECK(total_of(counts) == 1);
  CHECK(running_on(counts) == holder);

  // The replaced watch still notifies the same session.
  publish(node1, orders, event_json("/o/2", "ADDED", json{{"id", 2}}));
  auto again = collect_data_events(notices, 1, 10s);
  REQUIRE(again.ended == collected::end::count_reached);
  CHECK(notice_lines(again.events[0]) == lines{"ADDED /o/2"});

  // Stopped through node 3, gone through node 1; a second stop finds nothing.
  CHECK(stop_watch(node3, "w1") == true);
  CHECK(rows_named(list_watches(node1), "w1").empty());
  CHECK(client::request(node2, "GET", "/v1/watches/w1").status == 404);
  CHECK(stop_watch(node3, "w1") == false);
  counts = await_watch_total(cluster, 1, 0);
  INFO("watch counts after the stop: " << describe(counts));
  CHECK(counts.size() == cluster.size());
  CHECK(total_of(counts) == 0);
}
