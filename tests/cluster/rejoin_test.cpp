// A node that left gracefully and comes back on its data directory keeps its
// id, so placement gives it back the streams it owned: it takes each one's
// log from whoever held it meanwhile (same epoch, every event) and serves it
// again, and every node sees three live members.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

std::vector<std::string> history_cursors(const client::endpoint& ep, const std::string& stream) {
  std::vector<std::string> out;
  for (const auto& e : read_history(ep, stream)) out.push_back(e.value("cursor", ""));
  return out;
}

// Polls GET /v1/streams/{stream} on `ep` (a state read, with a growing
// pause) until its head is `head`; the last answer either way.
stream_info await_head(const client::endpoint& ep, const std::string& stream, const std::string& head,
                       std::chrono::milliseconds timeout) {
  stream_info info;
  poll_until(timeout, [&] {
    info = stream_info_of(ep, stream);
    return info.status == 200 && info.body.value("head", "") == head;
  });
  return info;
}

}  // namespace

TEST_CASE("a node that rejoins on its data directory takes its streams back with their log and epoch",
          "[cluster][rejoin]") {
  cluster_nodes cluster(3);
  // While the third node is away the first holds the stream, so the first
  // node's history is the holder's own.
  const auto stream = cluster.owned_stream(2, "rejoin", 0);
  const auto id = cluster.node_id(2);

  auto acked = publish_numbered(cluster.endpoint(0), stream, 1, 5);
  REQUIRE(cluster.terminate(2) == 0);  // SIGTERM: the graceful drain
  cluster.await_converged(10s);

  // Published while the owner is away: only the holder has these.
  const auto away = publish_numbered(cluster.endpoint(1), stream, 6, 10);
  for (const auto& c : away) CHECK(epoch_of(c) == epoch_of(acked.front()));
  acked.insert(acked.end(), away.begin(), away.end());

  cluster.restart(2);
  CHECK(cluster.node_id(2) == id);
  cluster.await_converged(20s);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto view = cluster.nodes_view(i);
    INFO("GET /admin/v1/nodes on node " << i << ": " << view.dump());
    CHECK(alive_members(view) == 3);
  }

  // The take-back runs after the node rejoins; its own copy says when it is done.
  auto info = await_head(cluster.endpoint(2), stream, acked.back(), 10s);
  INFO("GET /v1/streams/" << stream << " on the rejoined node: " << info.status << " " << info.body.dump());
  REQUIRE(info.status == 200);
  REQUIRE(info.body["head"] == acked.back());
  CHECK(info.body["epoch"] == epoch_of(acked.front()));

  // Both answer for the same log: the owner from its own copy, the node that
  // held it meanwhile as any other node would (a read it cannot answer
  // itself throws here with the reply, and the rest still runs).
  std::vector<std::string> on_owner, on_holder;
  CHECK_NOTHROW(on_owner = history_cursors(cluster.endpoint(2), stream));
  CHECK_NOTHROW(on_holder = history_cursors(cluster.endpoint(0), stream));
  CHECK(on_owner == acked);
  CHECK(on_holder == acked);

  // Served from the rejoined node: a resume from the first event gets the rest...
  client::sse_stream session(cluster.endpoint(2), sse_target({stream}, acked.front()));
  await_hello(session);
  auto got = collect_data_events(session, acked.size() - 1, 10s);
  INFO("resume ended: " << to_string(got.ended)
                        << (got.control ? " by " + got.control->event + " " + got.control->data : ""));
  REQUIRE(got.ended == collected::end::count_reached);
  CHECK(cursors_of(got.events) == std::vector<std::string>(acked.begin() + 1, acked.end()));

  // ...and the stream lives there again: a publish on another node lands in
  // the same epoch, on the rejoined node, and reaches the session.
  const auto next = publish_numbered(cluster.endpoint(1), stream, 16, 1);
  CHECK(epoch_of(next.front()) == epoch_of(acked.front()));
  auto live = collect_data_events(session, 1, 5s);
  REQUIRE(live.ended == collected::end::count_reached);
  CHECK(live.events.front().cursor == next.front());
  auto row = admin_stream_row(cluster.endpoint(2), stream);
  INFO("the rejoined node's admin row: " << row.dump());
  REQUIRE(row.is_object());
  CHECK(row["owner"] == id);
}
