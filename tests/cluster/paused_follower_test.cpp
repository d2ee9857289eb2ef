// Issue 26's first finding, as it was reproduced: publish, SIGSTOP the
// stream's follower (a node holding a session on the stream), publish
// through the owner, SIGCONT it, publish again. Under 0017 the resumed
// follower saw the owner as gone in its stale view, took its copy over with
// a newer term and fenced the real owner: the middle events vanished and
// their cursors were handed out again. With membership from etcd (ADR
// 0022) the resumed node learns first that its own registration lapsed,
// trusts none of its copies, and acts on nothing but the record.
//
// Checked: every acknowledged event is read exactly once, in order, under
// the cursor it was acknowledged with, through every node, by sessions
// that read throughout (the one on the paused node included) and by late
// ones; nothing acknowledged is reassigned; nobody is told to resync.

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/hung_process.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/replicated_traffic.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// Publishes events first .. first + count - 1 at 500/s through `targets`,
// each retried until acknowledged, and adds their cursors to `acked`.
void publish_phase(const std::vector<client::endpoint>& targets, const std::string& stream, int first,
                   int count, std::map<int, std::string>& acked, const std::string& when) {
  steady_publisher p(targets, stream, first, count, 500);
  const bool done = p.join(30s);
  INFO(when << ": " << p.failure());
  REQUIRE(done);
  merge_acknowledged(acked, p.acknowledged());
}

}  // namespace

TEST_CASE(
    "replication factor 2: a follower paused (SIGSTOP) past its lease and resumed takes nothing over, and "
    "every acknowledged event keeps its cursor on every node",
    "[cluster][replication][hung]") {
  constexpr int per_phase = 100;
  constexpr int total = 3 * per_phase;
  cluster_nodes cluster(3);
  // Owned by node 0 and followed by node 1 (its successor: the copy a
  // failover would take over).
  const auto stream = cluster.owned_stream(0, "paused", 1);
  const auto start = publish(cluster.endpoint(0), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  std::map<int, std::string> acked;
  std::ostringstream report;

  // One session on the follower (the node that will be paused), one on the third node.
  std::vector<std::unique_ptr<stream_reader>> readers;
  readers.push_back(
      std::make_unique<stream_reader>(std::vector{cluster.endpoint(1)}, stream, start, total, 60s));
  readers.push_back(
      std::make_unique<stream_reader>(std::vector{cluster.endpoint(2)}, stream, start, total, 60s));
  for (auto& r : readers) r->await_started(10s);

  publish_phase({cluster.endpoint(0)}, stream, 1, per_phase, acked, "before the pause");

  {
    hung_process hung(cluster.process(1).pid());
    // The record drops it once its lease (2 s) expires; the owner goes on
    // with the third node as its follower.
    const std::string down_line = "\"event\":\"cluster.member_down\",\"node\":\"" + cluster.node_id(1) + "\"";
    REQUIRE(cluster.process(0).await_log(down_line, 10s));
    steady_publisher during({cluster.endpoint(0)}, stream, per_phase + 1, per_phase, 500);
    INFO("while node 1 is stopped: " << during.failure());
    REQUIRE(during.join(30s));
    merge_acknowledged(acked, during.acknowledged());
    report << "while node 1 was stopped: " << during.retries() << " retries, longest wait "
           << during.longest_wait().count() << " ms\n";
  }
  // Resumed: it must learn that it lapsed before anything else.
  REQUIRE(cluster.process(1).await_log("\"event\":\"cluster.membership_lapsed\"", 10s));
  cluster.await_converged(20s);
  publish_phase({cluster.endpoint(1), cluster.endpoint(0)}, stream, 2 * per_phase + 1, per_phase, acked,
                "after the return");
  REQUIRE(acked.size() == static_cast<std::size_t>(total));
  for (const auto& [i, c] : acked) CHECK(epoch_of(c) == epoch_of(start));

  for (auto& r : readers) r->join();
  for (std::size_t k = 0; k < readers.size(); ++k) {
    INFO("reader " << k << ": " << readers[k]->events().size() << " events; controls "
                   << json(readers[k]->controls()).dump());
    CHECK(readers[k]->controls().empty());
    CHECK(compare_with_acknowledged(readers[k]->events(), acked) == "");
  }
  // Read back through every node from the start.
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    stream_reader late({cluster.endpoint(n)}, stream, start, total, 30s);
    late.await_started(10s);
    late.join();
    INFO("late reader on node " << n << ": " << late.events().size() << " events; controls "
                                << json(late.controls()).dump());
    CHECK(late.controls().empty());
    CHECK(compare_with_acknowledged(late.events(), acked) == "");
  }
  // The owner's admin row counts what its followers confirmed (it said 0
  // while its follower was in sync, issue 26).
  json row;
  poll_until(10s, [&] {
    row = admin_stream_row(cluster.endpoint(0), stream);
    return row.is_object() && row["replication"].value("acknowledged", 0) >= total + 1;
  });
  INFO("the owner's admin row: " << row.dump());
  CHECK(row["replication"].value("acknowledged", 0) == total + 1);
  // The resumed follower took nothing over.
  CHECK(cluster.process(1).log().find("\"event\":\"cluster.stream_taken_over\"") == std::string::npos);
  WARN("a paused follower:\n" << report.str());
}

TEST_CASE(
    "min-insync 1: a follower paused within its lease leaves the ISR after replica-lag, the owner goes on "
    "acknowledging alone, and the follower is listed again once caught up",
    "[cluster][replication][hung]") {
  constexpr int per_phase = 60;
  constexpr int total = 3 * per_phase;
  // A lease far longer than the pause: only the owner's lag rule can take
  // the follower out of the ISR (without it, writes would wait for it).
  cluster_nodes cluster(3, {"--member-lease-seconds", "30", "--min-insync", "1", "--replica-lag-ms", "1000"});
  const auto stream = cluster.owned_stream(0, "lagging", 1);
  const auto start = publish(cluster.endpoint(0), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  const auto isr_of_owner = [&] {
    auto row = admin_stream_row(cluster.endpoint(0), stream);
    return row.is_object() ? row["replication"]["record"].value("isr", json::array()) : json::array();
  };
  std::map<int, std::string> acked;
  stream_reader reader({cluster.endpoint(2)}, stream, start, total, 60s);
  reader.await_started(10s);
  publish_phase({cluster.endpoint(0)}, stream, 1, per_phase, acked, "before the pause");
  REQUIRE(poll_until(10s, [&] { return isr_of_owner().size() == 2; }));
  {
    hung_process hung(cluster.process(1).pid());
    publish_phase({cluster.endpoint(0)}, stream, per_phase + 1, per_phase, acked, "while node 1 is stopped");
    const std::string lagging = "\"event\":\"replication.follower_lagging\"";
    CHECK(cluster.process(0).await_log(lagging, 1s));
    CHECK(isr_of_owner() == json::array({cluster.node_id(0)}));
  }
  // Caught up and listed again, with no lapse of its membership.
  json isr;
  poll_until(20s, [&] {
    isr = isr_of_owner();
    return isr.size() == 2;
  });
  INFO("the owner's record's ISR: " << isr.dump());
  REQUIRE(isr.size() == 2);
  CHECK(cluster.process(1).log().find("\"event\":\"cluster.membership_lapsed\"") == std::string::npos);
  publish_phase({cluster.endpoint(1), cluster.endpoint(0)}, stream, 2 * per_phase + 1, per_phase, acked,
                "after the return");
  REQUIRE(acked.size() == static_cast<std::size_t>(total));
  for (const auto& [i, c] : acked) CHECK(epoch_of(c) == epoch_of(start));
  reader.join();
  CHECK(reader.controls().empty());
  CHECK(compare_with_acknowledged(reader.events(), acked) == "");
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    stream_reader late({cluster.endpoint(n)}, stream, start, total, 30s);
    late.await_started(10s);
    late.join();
    INFO("late reader on node " << n << ": " << late.events().size() << " events");
    CHECK(late.controls().empty());
    CHECK(compare_with_acknowledged(late.events(), acked) == "");
  }
}
