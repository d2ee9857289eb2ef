// Without replication (--replication-factor 1; replication_fencing_test
// covers the default): a member that hangs (SIGSTOP: its sockets stay
// open, it just stops answering) is noticed by the others through the middleman heartbeats
// (200 ms interval, 1 s connection timeout on every node): a survivor logs
// cluster.member_down for it within a few seconds and lists it down, the
// streams it owned move to the survivors (a session there is told
// `resync` owner_changed, and publishing goes on in a new epoch), and once
// it runs again (SIGCONT) the members find each other again.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/hung_process.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

using clock_type = std::chrono::steady_clock;

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

// What a survivor's admin view says of member `id`: its row, null if absent.
json row_of(const json& view, const std::string& id) {
  for (const auto& row : view.value("nodes", json::array()))
    if (row.value("id", "") == id) return row;
  return nullptr;
}

// Publishes one event through `ep`, retrying (with a growing pause, bounded
// by `timeout`) while the node answers 503: until every survivor has seen
// the member go, the one that now owns the stream in one view may not in
// another. The cursor and the number of attempts; throws with the last
// answer on timeout or on any other status.
struct published {
  std::string cursor;
  int attempts = 0;
};
published publish_when_placed(const client::endpoint& ep, const std::string& stream, const std::string& event,
                              std::chrono::milliseconds timeout) {
  published out;
  client::http_response r;
  // 503 while the stream is being placed anew; anything else ends the wait.
  poll_until(timeout, [&] {
    ++out.attempts;
    r = client::request(ep, "POST", events_target(stream), event, {{"Content-Type", "application/json"}});
    return r.status != 503;
  });
  if (r.status != 201)
    throw std::runtime_error("publish after the owner hung: status " + std::to_string(r.status) + ", body " +
                             r.body + " (attempt " + std::to_string(out.attempts) + ")");
  out.cursor = parse_body(r).value("cursor", "");
  return out;
}

}  // namespace

TEST_CASE(
    "without replication, a hung owner (SIGSTOP) is marked down within 5 s, its streams move on with "
    "resync owner_changed, and after SIGCONT all three members are alive again",
    "[cluster][hung]") {
  cluster_nodes cluster(3, {"--replication-factor", "1"});
  // The stream moves to the second node, not to the one the session is on:
  // the session's node then reaches the new owner through a relay, and the
  // two survivors notice the hang at different moments (each by its own
  // heartbeat timeout), unlike after a kill -9, whose closed connection both
  // see at once.
  const auto stream = cluster.owned_stream(2, "hung", 1);
  const auto hung_id = cluster.node_id(2);

  // One event, read back through a session on the first node from the
  // epoch's start: the session's relay to the owner is live before the hang.
  const auto before = publish(cluster.endpoint(0), stream, event_json("/e", "ADDED", json{{"i", 1}}));
  client::sse_stream session(cluster.endpoint(0), sse_target({stream}, epoch_of(before) + ":0"));
  await_hello(session);
  {
    auto got = collect_data_events(session, 1, 10s);
    INFO("ended: " << to_string(got.ended));
    REQUIRE(got.ended == collected::end::count_reached);
    REQUIRE(got.events.front().cursor == before);
  }

  std::ostringstream report;
  hung_process hung(cluster.process(2).pid());
  const auto stopped_at = clock_type::now();

  // The heartbeats notice the silence: 1 s without one, plus slack.
  const std::string down_line = "\"event\":\"cluster.member_down\",\"node\":\"" + hung_id + "\"";
  REQUIRE(cluster.process(0).await_log(down_line, 5s));
  report << "node 0 logged cluster.member_down for node 2 after " << ms_since(stopped_at) << " ms\n";

  // The survivor lists it down (or at least without counts: it cannot answer).
  {
    auto view = cluster.nodes_view(0);
    auto row = row_of(view, hung_id);
    INFO("GET /admin/v1/nodes on node 0: " << view.dump());
    REQUIRE(row.is_object());
    CHECK((row.value("state", "") == "down" || row.value("unreachable", false)));
  }

  // The session on the survivor is told the stream's log is gone with its owner.
  {
    auto m = next_non_heartbeat(session, 5s);
    report << "the session on node 0 got "
           << (m ? (m->event.empty() ? "data " : "event " + m->event + " ") + m->data
                 : std::string("nothing (closed or timed out)"))
           << " after " << ms_since(stopped_at) << " ms\n";
    INFO(report.str());
    REQUIRE(m);
    REQUIRE(m->event == "resync");
    auto data = message_json(*m);
    CHECK(data["stream"] == stream);
    CHECK(data["reason"] == "owner_changed");
  }

  // Publishing through the survivor goes on, in the stream's next life.
  {
    auto next =
        publish_when_placed(cluster.endpoint(0), stream, event_json("/e", "ADDED", json{{"i", 2}}), 5s);
    report << "a publish through node 0 succeeded after " << ms_since(stopped_at) << " ms (" << next.attempts
           << " attempt(s)): " << next.cursor << " (before: " << before << ")\n";
    INFO(report.str());
    CHECK(epoch_of(next.cursor) != epoch_of(before));
  }

  // Running again, the node and the survivors find each other: every node
  // lists all three alive.
  hung.resume();
  const auto resumed_at = clock_type::now();
  cluster.await_converged(15s);
  report << "after SIGCONT every node listed 3 alive after " << ms_since(resumed_at) << " ms\n";
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto view = cluster.nodes_view(i);
    INFO("GET /admin/v1/nodes on node " << i << ": " << view.dump());
    CHECK(alive_members(view) == 3);
  }
  WARN("a hung owner:\n" << report.str());
}
