// Many sessions on one stream cost the owner one feed per relaying node, not
// one per session: 300 sessions spread over three nodes all get an event,
// and the owner feeds each other node exactly once.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cluster/cluster_sessions.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/raw_sse_session.hpp"
#include "tests/support/sse_reading.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

}  // namespace

TEST_CASE("300 sessions over three nodes get every event through one feed per relaying node", "[cluster]") {
  cluster_nodes cluster(3);
  const auto stream = cluster.owned_stream(2, "fan");
  constexpr int sessions_count = 300;

  // Plain blocking sockets: one descriptor each, no per-session machinery.
  std::vector<std::unique_ptr<raw_sse_session>> sessions;
  std::vector<std::size_t> node_of;
  for (int k = 0; k < sessions_count; ++k) {
    const std::size_t node = static_cast<std::size_t>(k % 3);
    INFO("session " << k << " on node " << node);
    sessions.push_back(std::make_unique<raw_sse_session>(cluster.endpoint(node), sse_target({stream}), 5s));
    node_of.push_back(node);
    auto hello = next_non_heartbeat(*sessions.back(), 5s);
    REQUIRE(hello);
    REQUIRE(hello->event == "hello");
  }

  const auto cursor = publish(cluster.endpoint(0), stream, event_json("/fan", "ADDED", json{{"n", 1}}));

  // One deadline for all: the event is already on its way to every session.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  int received = 0;
  for (std::size_t k = 0; k < sessions.size(); ++k) {
    INFO("session " << k << " on node " << node_of[k]);
    auto m = next_non_heartbeat(*sessions[k], detail::left_until(deadline));
    REQUIRE(m);
    INFO("got event '" << m->event << "': " << m->data);
    REQUIRE(m->event.empty());
    auto e = parse_data_event(*m);
    CHECK(e.cursor == cursor);
    if (e.cursor == cursor) ++received;
  }
  CHECK(received == sessions_count);

  // The owner's row, as the owner and as another node see it: one feed of
  // the stream to each other node, none to itself.
  std::vector<std::string> others{cluster.node_id(0), cluster.node_id(1)};
  std::sort(others.begin(), others.end());
  for (std::size_t viewer : {std::size_t{2}, std::size_t{0}}) {
    auto view = cluster.nodes_view(viewer);
    INFO("GET /admin/v1/nodes on node " << viewer << ": " << view.dump());
    auto owner = node_row(view, cluster.node_id(2));
    REQUIRE(owner.is_object());
    CHECK(feeding(owner, stream) == others);
  }
  // Each relaying node serves its 100 sessions through its own relay.
  for (std::size_t node : {std::size_t{0}, std::size_t{1}}) {
    auto view = cluster.nodes_view(node);
    INFO("GET /admin/v1/nodes on node " << node << ": " << view.dump());
    auto self = node_row(view, cluster.node_id(node));
    REQUIRE(self.is_object());
    CHECK(self.value("relays", 0) >= 1);
  }
}
