// The stream's agreed record (ADR 0021) decides who may lead its log, not
// each node's own view. Three nodes, replication factor 2: the stream's
// owner and its follower are both killed. The third node, which placement
// now makes the owner, holds no copy and is in no ISR: it refuses writes
// and saying why, instead of starting the stream afresh (under the earlier
// rules it began a new epoch and acknowledged writes there, which the
// returning nodes then dropped, or which dropped theirs). The follower
// comes back on its data and is elected from the ISR: its copy, which a
// restart once made untrustworthy ("in sync" was kept in memory), goes on
// in the same epoch. Nothing acknowledged is lost, nobody is told to resync.

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
#include "tests/support/sse_reading.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The refusal of a stream without a leader (ADR 0021).
const std::vector<std::string> no_leader = {"in-sync replica"};

}  // namespace

TEST_CASE(
    "the record decides: with the owner and its follower killed the third node refuses writes, and the "
    "follower restarted on its data is elected and goes on in the same epoch",
    "[cluster][replication][records]") {
  cluster_nodes cluster(3);
  // Owned by node 0, followed by node 1 (its successor).
  const auto stream = cluster.owned_stream(0, "recorded", 1);
  const auto start = publish(cluster.endpoint(2), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  std::map<int, std::string> acked;
  publish_steadily(acked, {cluster.endpoint(2), cluster.endpoint(0)}, stream, 1, 50);

  cluster.kill9(0);
  cluster.kill9(1);
  // Node 2, alone now, owns the stream by placement but holds no copy: it
  // refuses, naming the ISR it waits for.
  auto refused = await_refused(cluster.endpoint(2), stream, 1000, no_leader);
  INFO("a publish to the lone node 2: " << refused.status << " " << refused.body);
  REQUIRE(refused.status == 503);
  CHECK(refused.body.find(cluster.node_id(1)) != std::string::npos);

  // The follower returns on its data: elected from the record's ISR once
  // a publish reaches it (through node 2, which relays to it now).
  cluster.restart(1);
  publish_steadily(acked, {cluster.endpoint(2), cluster.endpoint(1)}, stream, 51, 50);
  CHECK(cluster.process(1).log().find("\"event\":\"cluster.stream_taken_over\"") != std::string::npos);
  // The owner returns too and takes the stream back by a handoff.
  cluster.restart(0);
  cluster.await_converged(20s);
  publish_steadily(acked, {cluster.endpoint(0), cluster.endpoint(1), cluster.endpoint(2)}, stream, 101, 50);
  // The refused publish was not stored: its key is free.
  auto again = publish_keyed(cluster.endpoint(0), stream, 1000);
  INFO("the refused publish again: " << again.status << " " << again.body);
  REQUIRE(again.status == 201);
  acked[1000] = parse_body(again).value("cursor", "");

  CHECK(read_back_everywhere(cluster, stream, start, acked) == "");
  for (const auto& [i, c] : acked) CHECK(epoch_of(c) == epoch_of(start));
}

namespace {

client::http_response force_leader(const client::endpoint& ep, const std::string& stream, bool accept_loss) {
  json body{{"tenant", "default"}, {"stream", stream}, {"accept_loss", accept_loss}};
  return client::request(ep, "POST", "/admin/v1/streams/force-leader", body.dump(),
                         {{"Content-Type", "application/json"}}, 30s);
}

std::uint64_t seq_of(const std::string& cursor) {
  return std::stoull(cursor.substr(cursor.find(':') + 1));
}

}  // namespace

TEST_CASE(
    "min-insync 1: a follower that missed writes is not elected, and an operator's forced election says what "
    "it loses and goes on under a new epoch",
    "[cluster][replication][records]") {
  cluster_nodes cluster(2, {"--min-insync", "1"});
  const auto stream = cluster.owned_stream(0, "forced");
  const auto start = publish(cluster.endpoint(1), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  std::map<int, std::string> acked;
  publish_steadily(acked, {cluster.endpoint(1), cluster.endpoint(0)}, stream, 1, 20);
  // The follower dies; the owner shrinks the ISR to itself and goes on
  // alone (min-insync 1).
  cluster.kill9(1);
  publish_steadily(acked, {cluster.endpoint(0)}, stream, 21, 20);
  const auto last_old = acked.rbegin()->second;
  // The owner dies, the follower returns: it holds 21 events of 41 and is
  // not in the ISR, so it does not lead.
  cluster.kill9(0);
  cluster.restart(1);
  auto refused = await_refused(cluster.endpoint(1), stream, 1000, no_leader);
  INFO("a publish to node 1: " << refused.status << " " << refused.body);
  REQUIRE(refused.status == 503);
  CHECK(refused.body.find(cluster.node_id(0)) != std::string::npos);

  // Asked to force it, the node first says what that loses.
  auto asked = force_leader(cluster.endpoint(1), stream, false);
  INFO("force-leader without accept_loss: " << asked.status << " " << asked.body);
  REQUIRE(asked.status == 409);
  auto said = parse_body(asked);
  CHECK(said["this_node"].value("head", 0) == 21);
  CHECK_THAT(said.value("loses", ""), Catch::Contains(":21") && Catch::Contains(cluster.node_id(0)));
  auto forced = force_leader(cluster.endpoint(1), stream, true);
  INFO("force-leader with accept_loss: " << forced.status << " " << forced.body);
  REQUIRE(forced.status == 200);
  CHECK(parse_body(forced)["record"].value("leader", "") == cluster.node_id(1));

  // It goes on from its copy under a new epoch: no old cursor comes back.
  client::http_response next;
  poll_until(20s, [&] {
    next = publish_keyed(cluster.endpoint(1), stream, 2000);
    return next.status == 201;
  });
  INFO("the first publish after the force: " << next.status << " " << next.body);
  REQUIRE(next.status == 201);
  const auto first_new = parse_body(next).value("cursor", "");
  CHECK(epoch_of(first_new) != epoch_of(start));
  CHECK(seq_of(first_new) == 22);

  // A session that had read the old epoch's end is told to resync.
  {
    client::sse_stream resumed(cluster.endpoint(1), sse_target({stream}, last_old), {}, 10s);
    REQUIRE(resumed.status() == 200);
    auto first = next_non_heartbeat(resumed, 10s);
    REQUIRE(first.has_value());
    INFO("the resumed session's first message: " << first->event << " " << first->data);
    CHECK(first->event == "resync");
    CHECK_THAT(first->data, Catch::Contains("epoch_changed"));
  }

  // The old owner returns and takes the new log over; its own is gone.
  cluster.restart(0);
  cluster.await_converged(20s);
  std::map<int, std::string> after;
  after[2000] = first_new;
  publish_steadily(after, {cluster.endpoint(0), cluster.endpoint(1)}, stream, 3000, 20);
  for (const auto& [i, c] : after) CHECK(epoch_of(c) == epoch_of(first_new));
  CHECK(read_back_everywhere(cluster, stream, epoch_of(first_new) + ":21", after) == "");
}
