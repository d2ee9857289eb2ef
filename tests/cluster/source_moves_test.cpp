// Sources follow membership (issue 6, ADR 0016), with a real PostgreSQL
// channel as the upstream: when the node running a channel's source drains,
// the source starts again on the stream's new owner and the sessions on the
// other nodes go on reading it with no resync, no loss and no duplicate;
// when that node is killed, a survivor starts the source and its stream
// goes on from the replicated log (issue 26), so they go on reading too.
// Either way PostgreSQL ends up with exactly one LISTEN.

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/placement.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/cluster/cluster_watches.hpp"
#include "tests/cluster/pg_channels.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/raw_sse_session.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The source's node; the sessions are on the other two.
constexpr std::size_t source_node = 2;

struct channel_sessions {
  std::string channel;
  std::string stream;
  std::vector<std::unique_ptr<raw_sse_session>> sessions;  // two on node 0, two on node 1
};

// Two sessions on each of nodes 0 and 1.
void open_sessions_on(cluster_nodes& cluster, channel_sessions& out) {
  const auto uri = pg_uri(out.channel);
  out.sessions.clear();
  for (std::size_t node : {0, 1, 0, 1}) {
    out.sessions.push_back(std::make_unique<raw_sse_session>(cluster.endpoint(node),
                                                             "/v1/sse?uri=" + client::url_encode(uri), 10s));
    auto hello = next_non_heartbeat(*out.sessions.back(), 10s);
    REQUIRE(hello);
    INFO("hello: " << hello->data);
    REQUIRE(hello->event == "hello");
    REQUIRE(message_json(*hello).value("streams", json::object()).contains(out.stream));
  }
}

channel_sessions open_channel_sessions(cluster_nodes& cluster) {
  channel_sessions out;
  out.channel = channel_owned_by(cluster, source_node);
  out.stream = source_stream_of(pg_uri(out.channel));
  open_sessions_on(cluster, out);
  return out;
}

void notify(const postgres_server& pg, const std::string& channel, const std::string& id) {
  pg_query(pg.conninfo(), "NOTIFY " + channel + ", '{\"id\":\"" + id + "\",\"type\":\"CREATED\"}'");
}

// Each session's next message is the event at `path`; their cursors.
std::vector<std::string> expect_event(channel_sessions& c, const std::string& path) {
  std::vector<std::string> cursors;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (std::size_t k = 0; k < c.sessions.size(); ++k) {
    INFO("session " << k);
    auto m = next_non_heartbeat(*c.sessions[k], detail::left_until(deadline));
    REQUIRE(m);
    INFO("got event '" << m->event << "': " << m->data);
    REQUIRE(m->event.empty());
    auto e = parse_data_event(*m);
    CHECK(e.stream == c.stream);
    CHECK(e.path == path);
    cursors.push_back(e.cursor);
  }
  return cursors;
}

struct source_place {
  std::string where;              // sources per node, as last seen
  std::optional<std::size_t> at;  // the node that runs it
};

// Polls until one running node (`on`, when given) runs the source and
// PostgreSQL sees one LISTEN, on the channel.
source_place await_one_source(const cluster_nodes& cluster, const postgres_server& pg,
                              const std::string& channel, std::optional<std::size_t> on = std::nullopt) {
  source_place out;
  poll_until(20s, [&] {
    auto view = cluster.nodes_view(0);
    int running = 0;
    out = {};
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      if (!cluster.running(i)) continue;
      auto row = node_row(view, cluster.node_id(i));
      auto n = row.is_object() ? row.value("sources", -1) : -1;
      out.where += cluster.node_id(i) + "=" + std::to_string(n) + " ";
      running += n;
      if (n == 1) out.at = i;
    }
    auto listening = listen_statements(pg.conninfo());
    return running == 1 && (!on || out.at == on) && listening.size() == 1 &&
           listening.front() == "LISTEN \"" + channel + "\"";
  });
  return out;
}

}  // namespace

TEST_CASE(
    "draining the node that runs a PostgreSQL channel's source moves the source: sessions elsewhere "
    "keep reading with no resync, loss or duplicate, over one LISTEN",
    "[cluster][sources][postgres][drain]") {
  pg_cluster env;
  const auto& pg = env.pg;
  auto& cluster = env.cluster;
  auto c = open_channel_sessions(cluster);
  INFO("channel " << c.channel << ", stream " << c.stream);

  notify(pg, c.channel, "o-1");
  const auto before = expect_event(c, "/o-1");

  auto drain = client::request(cluster.endpoint(source_node), "POST", "/admin/v1/drain", "{}",
                               {{"Content-Type", "application/json"}});
  REQUIRE(drain.status == 202);
  CHECK(cluster.await_exit(source_node) == 0);
  cluster.await_converged(10s);
  auto where = await_one_source(cluster, pg, c.channel).where;
  INFO("sources per node: " << where);
  REQUIRE(listen_statements(pg.conninfo()).size() == 1);

  notify(pg, c.channel, "o-2");
  const auto after = expect_event(c, "/o-2");
  // The stream moved with its log: same epoch, the next seq, for everyone.
  for (std::size_t k = 0; k < after.size(); ++k) {
    INFO("session " << k << ": " << before[k] << " then " << after[k]);
    CHECK(epoch_of(after[k]) == epoch_of(before[k]));
    CHECK(cursor_of(after[k]).seq == cursor_of(before[k]).seq + 1);
  }
}

TEST_CASE(
    "killing the node that runs a PostgreSQL channel's source: the source starts again on a survivor, "
    "its stream goes on from the replicated log, and sessions and a watch elsewhere read the next change "
    "with no resync, over one LISTEN, and they read on when the node returns and the source moves back",
    "[cluster][sources][postgres][failover][join]") {
  pg_cluster env;
  const auto& pg = env.pg;
  auto& cluster = env.cluster;
  auto c = open_channel_sessions(cluster);
  INFO("channel " << c.channel << ", stream " << c.stream);

  // A watch of the channel that runs on a node that survives: its lease on
  // the source follows the source to its new node too.
  const auto ids = cluster.ids();
  std::string name;
  for (int k = 0; name.empty(); ++k)
    if (core::owner_of(ids, "default", "watch:pw" + std::to_string(k)) != cluster.node_id(source_node))
      name = "pw" + std::to_string(k);
  auto created = start_watch(
      cluster.endpoint(0),
      json{{"name", name}, {"uri", pg_uri(c.channel)}, {"debounce_ms", 50}, {"max_wait_ms", 100}});
  INFO("POST /v1/watches: " << created.status << " " << created.body);
  REQUIRE(created.status == 201);
  client::sse_stream notices(cluster.endpoint(0), sse_target({"watch:" + name}));
  await_hello(notices);

  notify(pg, c.channel, "o-1");
  const auto before = expect_event(c, "/o-1");
  auto noticed = read_notices_until(notices, R"("path":"o-1")");
  INFO("notices before the kill: " << json(noticed.lines).dump() << " " << noticed.ended);
  REQUIRE(noticed.ended.empty());

  cluster.kill9(source_node);
  cluster.await_converged(10s);
  auto where = await_one_source(cluster, pg, c.channel).where;
  INFO("sources per node: " << where);
  REQUIRE(listen_statements(pg.conninfo()).size() == 1);

  // The sessions stayed open: the next change comes as the next event of
  // the same log (a source restarted from a fresh baseline reports what
  // changes after it; a NOTIFY has no state to miss).
  notify(pg, c.channel, "o-2");
  const auto after = expect_event(c, "/o-2");
  for (std::size_t k = 0; k < after.size(); ++k) {
    INFO("session " << k << ": " << before[k] << " then " << after[k]);
    CHECK(epoch_of(after[k]) == epoch_of(before[k]));
    CHECK(cursor_of(after[k]).seq == cursor_of(before[k]).seq + 1);
  }
  noticed = read_notices_until(notices, R"("path":"o-2")");
  INFO("notices after the kill: " << json(noticed.lines).dump() << " " << noticed.ended);
  CHECK(noticed.ended.empty());
  CHECK(listen_statements(pg.conninfo()).size() == 1);

  // A session that starts on the survivor running the source now: its
  // subscription is local there, and must follow the source too.
  const auto runner = await_one_source(cluster, pg, c.channel);
  REQUIRE(runner.at);
  INFO("runs on " << cluster.node_id(*runner.at));
  auto local = std::make_unique<raw_sse_session>(cluster.endpoint(*runner.at),
                                                 "/v1/sse?uri=" + client::url_encode(pg_uri(c.channel)), 10s);
  auto hello = next_non_heartbeat(*local, 10s);
  REQUIRE(hello);
  REQUIRE(hello->event == "hello");
  c.sessions.push_back(std::move(local));

  // The node returns on its data: placement puts the source there again,
  // and the survivor hands it back (ADR 0016, join).
  cluster.restart(source_node);
  cluster.await_converged(10s);
  auto back = await_one_source(cluster, pg, c.channel, source_node);
  INFO("sources per node after the return: " << back.where);
  REQUIRE(back.at == source_node);

  notify(pg, c.channel, "o-3");
  const auto returned = expect_event(c, "/o-3");
  for (std::size_t k = 0; k < returned.size(); ++k) {
    INFO("session " << k << ": " << after[0] << " then " << returned[k]);
    CHECK(epoch_of(returned[k]) == epoch_of(after[0]));
    CHECK(cursor_of(returned[k]).seq == cursor_of(after[0]).seq + 1);
  }
  noticed = read_notices_until(notices, R"("path":"o-3")");
  INFO("notices after the return: " << json(noticed.lines).dump() << " " << noticed.ended);
  CHECK(noticed.ended.empty());
  CHECK(listen_statements(pg.conninfo()).size() == 1);

  // Everyone else lets go: the session that began on the survivor alone
  // keeps the source running on its owner (its lease followed it there).
  for (std::size_t k = 0; k + 1 < c.sessions.size(); ++k) c.sessions[k].reset();
  CHECK(stop_watch(cluster.endpoint(0), name));
  json rows;
  poll_until(10s, [&] {
    auto r = client::request(cluster.endpoint(source_node), "GET", "/v1/sources");
    rows = json::parse(r.body, nullptr, false);
    return r.status == 200 && rows.is_array() && rows.size() == 1 && rows[0].value("subscribers", 0) == 1;
  });
  INFO("GET /v1/sources on the owner: " << rows.dump());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].value("subscribers", 0) == 1);
  notify(pg, c.channel, "o-4");
  auto m = next_non_heartbeat(*c.sessions.back(), 10s);
  REQUIRE(m);
  INFO("got event '" << m->event << "': " << m->data);
  REQUIRE(m->event.empty());
  auto e = parse_data_event(*m);
  CHECK(e.path == "/o-4");
  CHECK(cursor_of(e.cursor).seq == cursor_of(returned.back()).seq + 1);
  CHECK(listen_statements(pg.conninfo()).size() == 1);
}
