// Replicated stream logs (ADR 0017), with real nodes on loopback and the
// default replication factor 2: the owner's log is kept on its first
// follower, the member that owns the stream once the owner is gone.
//
// - kill -9 of the owner in the middle of a steady stream of publishes:
//   every session, on every node (those on the dead node reconnect
//   elsewhere with Last-Event-ID), resumes without a resync and gets every
//   acknowledged event exactly once, in order, and nothing else.
// - kill -9 of the follower: a new follower is caught up from the owner's
//   log while publishes go on, and a second failure, of the owner, still
//   loses no acknowledged event. The lone survivor refuses writes (one copy
//   of the two min-insync requires) until a member returns.

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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

// Node `node` first, then the others: where a reader goes when its node dies.
std::vector<client::endpoint> starting_at(cluster_nodes& cluster, std::size_t node,
                                          const std::vector<std::size_t>& others) {
  std::vector<client::endpoint> out{cluster.endpoint(node)};
  for (auto o : others)
    if (o != node) out.push_back(cluster.endpoint(o));
  return out;
}

// The owner's replication row of `stream` on node `owner` lists `follower`
// as in sync.
bool in_sync_at(cluster_nodes& cluster, std::size_t owner, const std::string& stream, std::size_t follower) {
  auto row = admin_stream_row(cluster.endpoint(owner), stream);
  if (!row.is_object() || !row.contains("replication")) return false;
  for (const auto& f : row["replication"].value("followers", json::array()))
    if (f.value("node", "") == cluster.node_id(follower) && f.value("state", "") == "in_sync") return true;
  return false;
}

std::string describe_readers(const std::vector<std::unique_ptr<stream_reader>>& readers,
                             const std::vector<std::size_t>& nodes) {
  std::ostringstream out;
  for (std::size_t k = 0; k < readers.size(); ++k) {
    out << "reader on node " << nodes[k] << ": " << readers[k]->events().size() << " events, "
        << readers[k]->reconnects() << " reconnect(s)";
    for (const auto& c : readers[k]->controls()) out << ", control " << c;
    out << "\n";
  }
  return out.str();
}

}  // namespace

TEST_CASE(
    "replication factor 2: killing the owner mid-stream, every session resumes on the new owner without "
    "resync and gets every acknowledged event once, in order, and nothing unacknowledged",
    "[cluster][replication]") {
  constexpr int events = 10000;
  cluster_nodes cluster(3);
  // Owned by node 2; node 0 owns it once node 2 is gone, so it is the follower.
  const auto stream = cluster.owned_stream(2, "repl", 0);
  const auto start = publish(cluster.endpoint(1), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  REQUIRE(poll_until(10s, [&] { return in_sync_at(cluster, 2, stream, 0); }));

  // Two readers per node, from just after the first event.
  std::vector<std::unique_ptr<stream_reader>> readers;
  std::vector<std::size_t> reader_nodes;
  for (std::size_t node : {0, 1, 2})
    for (int k = 0; k < 2; ++k) {
      readers.push_back(
          std::make_unique<stream_reader>(starting_at(cluster, node, {0, 1}), stream, start, events, 90s));
      reader_nodes.push_back(node);
    }
  for (auto& r : readers) r->await_started(10s);

  // Through node 1 (forwarded to the owner), then node 0 if node 1 fails.
  steady_publisher publisher({cluster.endpoint(1), cluster.endpoint(0)}, stream, 1, events, 2000);
  REQUIRE(publisher.await_acknowledged(3000, 30s));
  cluster.kill9(2);
  const auto killed_at = std::chrono::steady_clock::now();
  bool finished = publisher.join(90s);
  INFO("publisher: " << publisher.acknowledged().size() << " acknowledged, " << publisher.retries()
                     << " retries; " << publisher.failure());
  REQUIRE(finished);
  const auto acked = publisher.acknowledged();
  REQUIRE(acked.size() == static_cast<std::size_t>(events));
  for (auto& r : readers) r->join();

  INFO(describe_readers(readers, reader_nodes));
  for (std::size_t k = 0; k < readers.size(); ++k) {
    INFO("reader " << k << " on node " << reader_nodes[k]);
    CHECK(readers[k]->controls().empty());  // no resync
    CHECK(compare_with_acknowledged(readers[k]->events(), acked) == "");
  }
  // One epoch throughout: the log survived its owner.
  CHECK(epoch_of(acked.rbegin()->second) == epoch_of(start));
  WARN("10 000 events at 2 000/s through node 1, owner killed after 3 000: "
       << publisher.retries() << " publish retries, the longest publish took "
       << publisher.longest_wait().count() << " ms; the last event was acknowledged "
       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at)
              .count()
       << " ms after the kill\n"
       << describe_readers(readers, reader_nodes));
}

TEST_CASE(
    "replication factor 2: a lost follower is replaced and caught up while publishes go on, and a second "
    "failure, of the owner, loses no acknowledged event",
    "[cluster][replication]") {
  constexpr int before = 2000, during = 2000;
  cluster_nodes cluster(3);
  // Owned by node 2, followed by node 0; node 1 is the follower once node 0 is gone.
  const auto stream = cluster.owned_stream(2, "rerep", 0);
  const auto start = publish(cluster.endpoint(1), stream, event_json("/e", "ADDED", json{{"i", 0}}));
  std::map<int, std::string> acked;
  {
    steady_publisher first_part({cluster.endpoint(1)}, stream, 1, before, 4000);
    REQUIRE(first_part.join(60s));
    acked = first_part.acknowledged();
  }
  cluster.kill9(0);

  // Publishes go on while node 1 is brought in and caught up from node 2's log.
  steady_publisher publisher({cluster.endpoint(1)}, stream, before + 1, during, 1000);
  INFO("publisher: " << publisher.failure());
  REQUIRE(publisher.join(60s));
  REQUIRE(poll_until(20s, [&] { return in_sync_at(cluster, 2, stream, 1); }));

  // Second failure: the owner. Node 1, the only one left, holds the log.
  cluster.kill9(2);
  stream_reader reader({cluster.endpoint(1)}, stream, start, before + during, 30s);
  reader.await_started(10s);
  reader.join();
  for (const auto& [i, c] : publisher.acknowledged()) acked[i] = c;
  const auto epoch = epoch_of(start);
  INFO("reader: " << reader.events().size() << " events; controls: " << json(reader.controls()).dump());
  CHECK(reader.controls().empty());
  CHECK(compare_with_acknowledged(reader.events(), acked) == "");

  // Alone, one copy of the two min-insync requires (and maybe the cut-off
  // side): it refuses writes, naming the rule.
  auto refused =
      client::request(cluster.endpoint(1), "POST", events_target(stream),
                      event_json("/e", "ADDED", json{{"i", -1}}), {{"Content-Type", "application/json"}});
  INFO("a publish to the lone survivor: " << refused.status << " " << refused.body);
  CHECK(refused.status == 503);
  CHECK(parse_body(refused).value("error", "").find("min-insync") != std::string::npos);

  // A member returns: writes go on in the same epoch, after every acknowledged event.
  cluster.restart(0);
  cluster.await_converged(20s);
  steady_publisher after({cluster.endpoint(1), cluster.endpoint(0)}, stream, before + during + 1, 10, 100);
  INFO("after the return: " << after.failure());
  REQUIRE(after.join(30s));
  for (const auto& [i, c] : after.acknowledged()) {
    CHECK(epoch_of(c) == epoch);
    CHECK(cursor_of(c).seq > cursor_of(acked.rbegin()->second).seq);
  }
}
