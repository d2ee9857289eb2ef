// Without replication (--replication-factor 1; replication_failover_test
// covers the default), when a stream's owner dies (kill -9, no handoff)
// the survivors re-place the stream, whose log is lost with it: the new owner starts a new epoch,
// every session on a survivor is told (data again, or `resync` with reason
// owner_changed) within 3 s, never left hanging, and publishing goes on.

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// What a session got after the owner died, in words for the report.
std::string outcome_of(const std::optional<core::sse_message>& m) {
  if (!m) return "nothing (closed or timed out)";
  if (m->event.empty()) return "data " + m->data;
  return "event " + m->event + " " + m->data;
}

}  // namespace

TEST_CASE(
    "without replication, killing a stream's owner gets every survivor's session a resync within 3 s, "
    "and publishing goes on in a new epoch",
    "[cluster]") {
  cluster_nodes cluster(3, {"--replication-factor", "1"});
  const auto stream = cluster.owned_stream(2, "loss");

  const auto before = publish_numbered(cluster.endpoint(0), stream, 1, 3);
  auto sessions = open_sessions(cluster, {0, 1}, 2, stream);
  // Every relay is live before the kill: an idle session that was never fed
  // would prove nothing by not hanging.
  const auto live = publish_numbered(cluster.endpoint(0), stream, 4, 1);
  for (auto& s : sessions) {
    INFO("a session on node " << s.node);
    auto got = collect_data_events(*s.stream, 1, 10s);
    REQUIRE(got.ended == collected::end::count_reached);
    REQUIRE(got.events.front().cursor == live.front());
  }

  cluster.kill9(2);
  const auto killed_at = std::chrono::steady_clock::now();
  const auto deadline = killed_at + 3s;

  std::ostringstream report;
  for (auto& s : sessions) {
    auto m = next_non_heartbeat(*s.stream, detail::left_until(deadline));
    auto after =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at);
    report << "node " << s.node << " after " << after.count() << " ms: " << outcome_of(m) << "\n";
    INFO("a session on node " << s.node << ": " << outcome_of(m));
    REQUIRE(m);
    // Without replication the log died with its owner: data of the
    // stream's next life without this resync first would be a silent gap.
    REQUIRE(m->event == "resync");
    auto data = message_json(*m);
    CHECK(data["stream"] == stream);
    CHECK(data["reason"] == "owner_changed");
  }
  // Which of the two each session got, for whoever reads the run.
  WARN("after kill -9 of the owner:\n" << report.str());

  // The survivors agree the owner is gone, and the stream goes on elsewhere.
  cluster.await_converged(10s);
  const auto next = publish(cluster.endpoint(0), stream, event_json("/e", "ADDED", json{{"i", 5}}));
  CHECK(epoch_of(next) != epoch_of(before.front()));

  // A new session on the second node reads the new epoch from its start, then live.
  client::sse_stream fresh(cluster.endpoint(1), sse_target({stream}, epoch_of(next) + ":0"));
  await_hello(fresh);
  auto first = collect_data_events(fresh, 1, 5s);
  INFO("fresh session ended: " << to_string(first.ended)
                               << (first.control ? " by " + first.control->event + " " + first.control->data
                                                 : ""));
  REQUIRE(first.ended == collected::end::count_reached);
  CHECK(first.events.front().cursor == next);
  const auto later = publish_numbered(cluster.endpoint(0), stream, 6, 1);
  auto live_again = collect_data_events(fresh, 1, 5s);
  REQUIRE(live_again.ended == collected::end::count_reached);
  CHECK(live_again.events.front().cursor == later.front());
}
