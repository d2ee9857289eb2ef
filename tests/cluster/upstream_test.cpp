// One upstream subscription per source key in the whole cluster (issue 6):
// 300 SSE sessions spread over three nodes all name one PostgreSQL channel
// (a real server from Debian, tests/support/postgres_server); the channel's
// source runs once, on the owner of its stream `src:<hash>`, which feeds
// each other node once, and PostgreSQL itself sees exactly one LISTEN. A
// webhook's generated token is the same on every member.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "core/placement.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/cluster/pg_channels.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/raw_sse_session.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// Polls node `viewer`'s GET /admin/v1/nodes with short, growing pauses until
// `settled` holds for it or `timeout` passes; returns the last view either
// way, so that the caller's checks say what was wrong. The admin view is
// gathered from every member, and a relay's feed is registered on the
// owner asynchronously: a bounded poll is how a test sees it settle.
json await_nodes_view(const cluster_nodes& cluster, std::size_t viewer,
                      const std::function<bool(const json&)>& settled, std::chrono::milliseconds timeout) {
  json view;
  poll_until(timeout, [&] {
    view = cluster.nodes_view(viewer);
    return settled(view);
  });
  return view;
}

}  // namespace

TEST_CASE(
    "300 sessions over three nodes on one PostgreSQL channel share one LISTEN and one source "
    "and one feed per relaying node",
    "[cluster][sources][postgres]") {
  postgres_server pg;
  temp_dir dir;
  const auto cfg = dir.path() / "tidings.yaml";
  write_pg_config(cfg, pg.conninfo());
  // And a webhook whose token each member generates (ADR 0029).
  std::ofstream(cfg, std::ios::app) << "  resources:\n    - uri: hook://everywhere\n"
                                       "      watch: {strategy: {type: webhook}}\n";
  // Every node gets the same upstreams.
  cluster_nodes cluster(3, {"--config", cfg.string()});

  // The generated token is derived from the cluster secret: the same on
  // every member, so the sender may call any of them.
  std::set<std::string> tokens;
  for (std::size_t i = 0; i < 3; ++i) {
    auto hooks = client::request(cluster.endpoint(i), "GET", "/admin/v1/webhooks");
    REQUIRE(hooks.status == 200);
    tokens.insert(json::parse(hooks.body)["webhooks"].at(0)["token"].get<std::string>());
  }
  REQUIRE(tokens.size() == 1);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(client::request(cluster.endpoint(i), "POST", "/webhooks/resource-updated/" + *tokens.begin(), "{}")
              .status == 200);

  // A channel whose source belongs on the third node: the sessions on the
  // first two read it through their relays.
  constexpr std::size_t owner = 2;
  const auto channel = channel_owned_by(cluster, owner);
  const auto uri = pg_uri(channel);
  const auto stream = source_stream_of(uri);
  const auto target = "/v1/sse?uri=" + client::url_encode(uri);
  INFO("channel " << channel << ", stream " << stream << " (owner " << cluster.node_id(owner) << ")");
  REQUIRE(listen_statements(pg.conninfo()).empty());

  // 100 sessions per node, interleaved, on plain blocking sockets (one
  // descriptor each). Each answers once its node has subscribed the source
  // (on the owner, for the first one there the first read), then says hello.
  constexpr int sessions_count = 300;
  std::vector<std::unique_ptr<raw_sse_session>> sessions;
  std::vector<std::size_t> node_of;
  for (int k = 0; k < sessions_count; ++k) {
    const std::size_t node = static_cast<std::size_t>(k % 3);
    INFO("session " << k << " on node " << node);
    sessions.push_back(std::make_unique<raw_sse_session>(cluster.endpoint(node), target, 10s));
    node_of.push_back(node);
    auto hello = next_non_heartbeat(*sessions.back(), 10s);
    REQUIRE(hello);
    REQUIRE(hello->event == "hello");
    auto streams = message_json(*hello).value("streams", json::object());
    INFO("hello: " << hello->data);
    REQUIRE(streams.size() == 1);
    REQUIRE(streams.contains(stream));
  }

  // (1) The upstream's own view: one connection listens, on this channel.
  {
    auto listening = listen_statements(pg.conninfo());
    INFO("PostgreSQL's listening backends' statements: " << json(listening).dump());
    REQUIRE(listening.size() == 1);
    CHECK(listening.front() == "LISTEN \"" + channel + "\"");
  }

  // (2) The source runs on the owner only, and (3) the owner feeds each other
  // node once, as the owner's own admin view (node 3's) shows it.
  std::vector<std::string> others{cluster.node_id(0), cluster.node_id(1)};
  std::sort(others.begin(), others.end());
  auto settled = [&](const json& view) {
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      auto row = node_row(view, cluster.node_id(i));
      if (!row.is_object() || row.value("sources", -1) != (i == owner ? 1 : 0)) return false;
    }
    return feeding(node_row(view, cluster.node_id(owner)), stream) == others;
  };
  for (std::size_t viewer : {owner, std::size_t{0}}) {
    auto view = await_nodes_view(cluster, viewer, settled, 10s);
    INFO("GET /admin/v1/nodes on node " << viewer << ": " << view.dump());
    int running = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      auto row = node_row(view, cluster.node_id(i));
      REQUIRE(row.is_object());
      INFO("node " << i << "'s row");
      CHECK(row.value("sources", -1) == (i == owner ? 1 : 0));
      running += row.value("sources", 0);
    }
    CHECK(running == 1);
    CHECK(feeding(node_row(view, cluster.node_id(owner)), stream) == others);
    // The relaying nodes serve their 100 sessions each through a relay.
    for (std::size_t i : {std::size_t{0}, std::size_t{1}})
      CHECK(node_row(view, cluster.node_id(i)).value("relays", 0) >= 1);
  }
  // GET /v1/sources says the same from each node's side.
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto r = client::request(cluster.endpoint(i), "GET", "/v1/sources");
    INFO("GET /v1/sources on node " << i << ": " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    auto list = parse_body(r);
    REQUIRE(list.is_array());
    if (i == owner) {
      REQUIRE(list.size() == 1);
      CHECK(list[0].value("stream", "") == stream);
      CHECK(list[0].value("uri", "") == uri);
    } else {
      CHECK(list.empty());
    }
  }

  // (4) Two changes upstream: every session gets both, with the same cursors
  // (consecutive: one source wrote them, once each), in order.
  pg_query(pg.conninfo(), "NOTIFY " + channel + R"(, '{"id":"o-1","type":"CREATED","total":12}')");
  pg_query(pg.conninfo(), "NOTIFY " + channel + R"(, '{"id":"o-2","type":"PAID"}')");
  // One deadline for all: the events are already on their way to every session.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  std::vector<std::string> cursors;
  int received = 0;
  for (std::size_t k = 0; k < sessions.size(); ++k) {
    INFO("session " << k << " on node " << node_of[k]);
    std::vector<std::string> got;
    for (const char* expected : {"/o-1", "/o-2"}) {
      auto m = next_non_heartbeat(*sessions[k], detail::left_until(deadline));
      REQUIRE(m);
      INFO("got event '" << m->event << "': " << m->data);
      REQUIRE(m->event.empty());
      auto e = parse_data_event(*m);
      CHECK(e.stream == stream);
      CHECK(e.path == expected);
      CHECK(e.id == e.cursor);
      got.push_back(e.cursor);
    }
    if (cursors.empty()) {
      cursors = got;
      REQUIRE(cursors.size() == 2);
      CHECK(cursor_of(cursors[0]).epoch == cursor_of(cursors[1]).epoch);
      CHECK(cursor_of(cursors[0]).seq + 1 == cursor_of(cursors[1]).seq);
    }
    CHECK(got == cursors);
    if (got == cursors) ++received;
  }
  CHECK(received == sessions_count);

  // Still one LISTEN after the traffic: no node started a second subscription.
  CHECK(listen_statements(pg.conninfo()).size() == 1);
}
