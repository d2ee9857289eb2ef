// Fencing (ADR 0017): an owner that is paused (SIGSTOP) long enough for the
// others to fail over, then resumes believing it still owns its streams,
// must not acknowledge or deliver anything of its stale term. Its
// followers took a newer term; once it is back it steps down, and takes
// the stream back (it is still placement's first choice) only with the
// newer log. Every publish to it meanwhile is refused (503, retried by the
// client with the same key) or goes into the one log; every session on
// every node reads exactly the acknowledged events, once, in order.

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/hung_process.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/replicated_traffic.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

}  // namespace

TEST_CASE(
    "replication factor 2: an owner paused past failover (SIGSTOP) steps down when it resumes, publishes to "
    "it are refused or go into the one log, and no client sees its stale term",
    "[cluster][replication][hung]") {
  constexpr int per_phase = 200;
  cluster_nodes cluster(3);
  // Owned by node 2 and followed by node 0, which owns it while node 2 is away.
  const auto stream = cluster.owned_stream(2, "fence", 0);
  const auto start = publish(cluster.endpoint(1), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  std::map<int, std::string> acked;
  std::ostringstream report;

  constexpr int total = 4 * per_phase;
  std::vector<std::unique_ptr<stream_reader>> readers;
  readers.push_back(std::make_unique<stream_reader>(std::vector{cluster.endpoint(0), cluster.endpoint(1)},
                                                    stream, start, total, 60s));
  readers.push_back(std::make_unique<stream_reader>(std::vector{cluster.endpoint(1), cluster.endpoint(0)},
                                                    stream, start, total, 60s));
  for (auto& r : readers) r->await_started(10s);

  {
    steady_publisher before({cluster.endpoint(1)}, stream, 1, per_phase, 1000);
    REQUIRE(before.join(30s));
    merge_acknowledged(acked, before.acknowledged());
  }

  hung_process hung(cluster.process(2).pid());
  const std::string down_line = "\"event\":\"cluster.member_down\",\"node\":\"" + cluster.node_id(2) + "\"";
  REQUIRE(cluster.process(0).await_log(down_line, 5s));
  REQUIRE(cluster.process(1).await_log(down_line, 5s));
  {
    // Node 0 owns it now, with the log it followed: same epoch, next seqs.
    steady_publisher during({cluster.endpoint(1)}, stream, per_phase + 1, per_phase, 1000);
    INFO("while node 2 is stopped: " << during.failure());
    REQUIRE(during.join(30s));
    merge_acknowledged(acked, during.acknowledged());
    report << "while node 2 was stopped: " << during.retries() << " retries\n";
  }
  for (const auto& [i, c] : acked) REQUIRE(epoch_of(c) == epoch_of(start));

  // Node 2 runs again, still holding its old term's log. Publish to it at
  // once, each event once: it must refuse them or store them in the one log.
  hung.resume();
  int refused = 0, stored = 0;
  std::map<int, std::string> to_node2;
  {
    client::http_connection conn(cluster.endpoint(2), 15s);
    for (int i = 2 * per_phase + 1; i <= 3 * per_phase; ++i) {
      auto r = conn.request(
          "POST", events_target(stream), event_json("/e", "ADDED", json{{"i", i}}),
          {{"Content-Type", "application/json"}, {"Idempotency-Key", stream + "-" + std::to_string(i)}});
      if (r.status == 201 || r.status == 200) {
        ++stored;
        to_node2[i] = parse_body(r).value("cursor", "");
      } else {
        INFO("a publish to the resumed node: " << r.status << " " << r.body);
        REQUIRE(r.status == 503);
        ++refused;
      }
    }
  }
  report << "publishes to node 2 right after SIGCONT: " << stored << " stored, " << refused << " refused\n";
  merge_acknowledged(acked, to_node2);
  // The refused ones are sent again, with their keys, through node 1 (a
  // refused publish may still have been stored: the key finds it).
  {
    std::vector<int> missing;
    for (int i = 2 * per_phase + 1; i <= 3 * per_phase; ++i)
      if (!to_node2.contains(i)) missing.push_back(i);
    for (int i : missing) {
      steady_publisher again({cluster.endpoint(1), cluster.endpoint(0)}, stream, i, 1, 1000, 1);
      INFO("retrying event " << i << ": " << again.failure());
      REQUIRE(again.join(30s));
      merge_acknowledged(acked, again.acknowledged());
    }
  }
  cluster.await_converged(20s);
  {
    steady_publisher after({cluster.endpoint(1), cluster.endpoint(2)}, stream, 3 * per_phase + 1, per_phase,
                           1000);
    INFO("after the return: " << after.failure());
    REQUIRE(after.join(30s));
    merge_acknowledged(acked, after.acknowledged());
  }
  REQUIRE(acked.size() == static_cast<std::size_t>(total));

  // A session on the returned node, from the start, and the ones that read throughout.
  stream_reader late({cluster.endpoint(2)}, stream, start, total, 30s);
  late.await_started(10s);
  late.join();
  for (auto& r : readers) r->join();
  for (std::size_t k = 0; k < readers.size(); ++k) {
    INFO("reader " << k << ": " << readers[k]->events().size() << " events; controls "
                   << json(readers[k]->controls()).dump());
    CHECK(readers[k]->controls().empty());
    CHECK(compare_with_acknowledged(readers[k]->events(), acked) == "");
  }
  INFO("reader on node 2: " << late.events().size() << " events; controls " << json(late.controls()).dump());
  CHECK(late.controls().empty());
  CHECK(compare_with_acknowledged(late.events(), acked) == "");
  for (const auto& [i, c] : acked) CHECK(epoch_of(c) == epoch_of(start));
  // It stepped down: it learned first that its registration had lapsed
  // (ADR 0022), so it acted as the owner of nothing until listed again.
  CHECK(cluster.process(2).log().find("\"event\":\"cluster.membership_lapsed\"") != std::string::npos);
  WARN("a paused owner:\n" << report.str());
}
