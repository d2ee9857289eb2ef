// A stream lives on one node (its owner by placement); publishes made on any
// node are forwarded there, and sessions on every node, served through
// relays, see the same events with the same cursors in the same order.

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

}  // namespace

TEST_CASE("events published on one node reach sessions on every node with the owner's cursors, in order",
          "[cluster]") {
  cluster_nodes cluster(3);
  // Owned by the third node: the publisher (first node) and two of the three
  // session nodes are not the owner, so both forwarding and relaying count.
  const auto stream = cluster.owned_stream(2, "deliver");
  constexpr int count = 50;

  auto sessions = open_sessions(cluster, {0, 1, 2}, 2, stream);
  const auto acked = publish_numbered(cluster.endpoint(0), stream, 1, count);
  REQUIRE(acked.size() == count);
  for (const auto& c : acked) CHECK(epoch_of(c) == epoch_of(acked.front()));
  CHECK(cursor_of(acked.front()).seq + count - 1 == cursor_of(acked.back()).seq);

  for (auto& s : sessions) {
    INFO("a session on node " << s.node);
    auto got = collect_data_events(*s.stream, count, 10s);
    INFO("ended: " << to_string(got.ended)
                   << (got.control ? " by " + got.control->event + " " + got.control->data : ""));
    REQUIRE(got.ended == collected::end::count_reached);
    CHECK(cursors_of(got.events) == acked);
    CHECK(ids_of(got.events) == acked);
    std::vector<int> numbers;
    for (const auto& e : got.events) {
      CHECK(e.stream == stream);
      numbers.push_back(e.data.value("i", 0));
    }
    std::vector<int> expected;
    for (int i = 1; i <= count; ++i) expected.push_back(i);
    CHECK(numbers == expected);
  }

  // The log is where placement put it: the third node holds the stream.
  auto row = admin_stream_row(cluster.endpoint(2), stream);
  INFO("the owner's admin row: " << row.dump());
  REQUIRE(row.is_object());
  CHECK(row["owner"] == cluster.node_id(2));
  CHECK(row["head"] == acked.back());
}
