// Issue 26's two-node finding, as the issue expects it to behave now: two
// nodes, replication factor 2 and so min-insync 2 (ADR 0021). Under 0017 a
// node left alone acknowledged writes with no replica, and when its peer
// returned with a newer term those writes were discarded (up to 845 in a
// round). Now, while one node is down, writes to the stream are refused
// with 503 and the reason, reads go on, and when both are back every
// acknowledged event is there, once, under its cursor, through both nodes.

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/replicated_traffic.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

client::http_response post(const client::endpoint& ep, const std::string& stream, int i) {
  return client::request(
      ep, "POST", events_target(stream), event_json("/e", "ADDED", json{{"i", i}}),
      {{"Content-Type", "application/json"}, {"Idempotency-Key", stream + "-" + std::to_string(i)}}, 15s);
}

// Polls until a publish through `ep` is refused for min-insync, and
// returns that answer (the node may first need to see its peer gone).
client::http_response await_refused(const client::endpoint& ep, const std::string& stream, int i) {
  client::http_response r;
  poll_until(15s, [&] {
    r = post(ep, stream, i);
    return r.status == 503 && r.body.find("min-insync") != std::string::npos;
  });
  return r;
}

}  // namespace

TEST_CASE(
    "two nodes, replication factor 2: a node left alone refuses writes (min-insync 2) and serves reads, and "
    "nothing acknowledged is lost when its peer returns",
    "[cluster][replication][min-insync]") {
  cluster_nodes cluster(2);
  // Owned by node 0, followed by node 1.
  const auto stream = cluster.owned_stream(0, "pair");
  const auto start = publish(cluster.endpoint(1), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  std::map<int, std::string> acked;
  {
    steady_publisher before({cluster.endpoint(1), cluster.endpoint(0)}, stream, 1, 50, 500);
    INFO(before.failure());
    REQUIRE(before.join(30s));
    merge_acknowledged(acked, before.acknowledged());
  }

  // The owner dies: node 1 holds the log, but alone it is one copy of two.
  cluster.kill9(0);
  auto refused = await_refused(cluster.endpoint(1), stream, 1000);
  INFO("a publish to the lone node 1: " << refused.status << " " << refused.body);
  REQUIRE(refused.status == 503);
  // Reads go on.
  {
    stream_reader reader({cluster.endpoint(1)}, stream, start, 50, 20s);
    reader.await_started(10s);
    reader.join();
    INFO(json(reader.controls()).dump());
    CHECK(compare_with_acknowledged(reader.events(), acked) == "");
  }

  // Then node 1 dies too, and node 0 comes back alone: it refuses as well
  // (under 0017 it took writes here that node 1's newer term later dropped).
  cluster.kill9(1);
  cluster.restart(0);
  refused = await_refused(cluster.endpoint(0), stream, 1001);
  INFO("a publish to the lone node 0: " << refused.status << " " << refused.body);
  REQUIRE(refused.status == 503);

  // Both back: writes go on, and everything acknowledged is there.
  cluster.restart(1);
  cluster.await_converged(20s);
  {
    steady_publisher after({cluster.endpoint(0), cluster.endpoint(1)}, stream, 51, 50, 500);
    INFO(after.failure());
    REQUIRE(after.join(30s));
    merge_acknowledged(acked, after.acknowledged());
  }
  // The refused ones were not stored (503 "not stored"): their keys are free.
  for (int i : {1000, 1001}) {
    auto r = post(cluster.endpoint(0), stream, i);
    INFO("the refused publish " << i << " again: " << r.status << " " << r.body);
    REQUIRE(r.status == 201);
    acked[i] = parse_body(r).value("cursor", "");
  }
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    stream_reader late({cluster.endpoint(n)}, stream, start, acked.size(), 20s);
    late.await_started(10s);
    late.join();
    INFO("node " << n << ": " << late.events().size() << " events; controls "
                 << json(late.controls()).dump());
    CHECK(late.controls().empty());
    CHECK(compare_with_acknowledged(late.events(), acked) == "");
  }
  for (const auto& [i, c] : acked) CHECK(epoch_of(c) == epoch_of(start));
}
