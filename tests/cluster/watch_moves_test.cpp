// Watches follow membership (issue 6, ADR 0016): a drained node hands its
// watch to the new owner with its position, so every change is noticed
// exactly once and the notice stream keeps its epoch; a killed node's watch
// is restarted by the survivor that owns it now, from the spec the others
// kept; when that node returns, the cluster settles on one copy; and a
// watch placed on a node that joins moves there with its position.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/placement.hpp"
#include "tests/cluster/cluster_sessions.hpp"
#include "tests/cluster/cluster_watches.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// Where watch "w1" is placed, and a stream "orders..." on the next node
// (it stays up while the watch's node leaves), with the watch started on it.
struct placed_watch {
  std::size_t holder = 0;
  std::size_t reader = 0;  // owns the watched stream; the test's sessions are here
  std::string orders;
};

placed_watch start_placed_watch(cluster_nodes& cluster) {
  placed_watch w;
  const auto ids = cluster.ids();
  const auto placed = core::owner_of(ids, "default", "watch:w1");
  w.holder = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), placed) - ids.begin());
  w.reader = (w.holder + 1) % cluster.size();
  w.orders = cluster.owned_stream(w.reader, "orders");
  const auto ep = cluster.endpoint(w.reader);
  publish(ep, w.orders, event_json("/o/0", "ADDED", json{{"id", 0}}));
  auto created = start_watch(
      ep, json{{"name", "w1"}, {"uri", "stream://" + w.orders}, {"debounce_ms", 50}, {"max_wait_ms", 100}});
  INFO("POST /v1/watches: " << created.status << " " << created.body);
  REQUIRE(created.status == 201);
  auto counts = await_watch_total(cluster, w.reader, 1);
  INFO("watch counts: " << describe(counts));
  REQUIRE(running_on(counts) == cluster.node_id(w.holder));
  return w;
}

// The node that runs the watch once its holder left (the one node of the
// others whose count is 1).
std::string moved_from_holder(const cluster_nodes& cluster, const placed_watch& w) {
  auto counts = await_watch_total(cluster, w.reader, 1, 10s, cluster.size() - 1);
  INFO("watch counts after its node left: " << describe(counts));
  auto now_on = running_on(counts);
  REQUIRE(!now_on.empty());
  CHECK(now_on != cluster.node_id(w.holder));
  return now_on;
}

}  // namespace

TEST_CASE(
    "draining a watch's node moves the watch with its position: each change is noticed once, in the "
    "same notice epoch",
    "[cluster][watch][drain]") {
  cluster_nodes cluster(3);
  const auto w = start_placed_watch(cluster);
  const auto ep = cluster.endpoint(w.reader);

  client::sse_stream notices(ep, sse_target({"watch:w1"}));
  await_hello(notices);
  publish(ep, w.orders, event_json("/o/1", "ADDED", json{{"id", 1}}));
  auto first = read_notices(notices, {"ADDED /o/1"});
  INFO("before the drain: " << json(first.lines).dump() << " " << first.ended);
  REQUIRE(first.ended.empty());

  auto drain = client::request(cluster.endpoint(w.holder), "POST", "/admin/v1/drain", "{}",
                               {{"Content-Type", "application/json"}});
  REQUIRE(drain.status == 202);
  // A change while the watch moves: the old node notices it before it lets
  // go, or the new one from the position it was handed; never neither.
  publish(ep, w.orders, event_json("/o/2", "ADDED", json{{"id", 2}}));
  CHECK(cluster.await_exit(w.holder) == 0);
  cluster.await_converged(10s);

  const auto now_on = moved_from_holder(cluster, w);
  auto listed = rows_named(list_watches(ep), "w1");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["state"] == "running");

  publish(ep, w.orders, event_json("/o/3", "ADDED", json{{"id", 3}}));
  auto after = read_notices(notices, {"ADDED /o/2", "ADDED /o/3"});
  INFO("after the drain: " << json(after.lines).dump() << " cursors " << json(after.cursors).dump() << " "
                           << after.ended);
  REQUIRE(after.ended.empty());
  // Once each, nothing noticed twice (/o/1 again would be a lost position).
  CHECK(after.lines == std::vector<std::string>{"ADDED /o/2", "ADDED /o/3"});
  // The notice stream moved with its log: same epoch, consecutive cursors.
  std::vector<std::string> cursors = first.cursors;
  cursors.insert(cursors.end(), after.cursors.begin(), after.cursors.end());
  for (std::size_t i = 1; i < cursors.size(); ++i) {
    CHECK(epoch_of(cursors[i]) == epoch_of(cursors[0]));
    CHECK(cursor_of(cursors[i]).seq == cursor_of(cursors[i - 1]).seq + 1);
  }
}

// The notices' cursors run on in one epoch, one seq after another.
void check_consecutive(const std::vector<std::string>& cursors) {
  for (std::size_t i = 1; i < cursors.size(); ++i) {
    CHECK(epoch_of(cursors[i]) == epoch_of(cursors[0]));
    CHECK(cursor_of(cursors[i]).seq == cursor_of(cursors[i - 1]).seq + 1);
  }
}

TEST_CASE(
    "a killed node's watch restarts on the survivor that owns it now, its notice stream goes on in the "
    "same epoch with no resync, and when the node returns one copy runs",
    "[cluster][watch][failover]") {
  cluster_nodes cluster(3);
  const auto w = start_placed_watch(cluster);
  const auto ep = cluster.endpoint(w.reader);

  // The other members hold the watch's spec before its node goes.
  std::map<std::string, int> copies;
  poll_until(5s, [&] {
    copies = node_counts(cluster, w.reader, "watch_copies");
    return copies.size() == cluster.size() && total_of(copies) == 2 && copies[cluster.node_id(w.holder)] == 0;
  });
  INFO("spec copies: " << describe(copies));
  REQUIRE(total_of(copies) == 2);

  // A session on the notice stream, on a node that stays, across the kill.
  client::sse_stream notices(ep, sse_target({"watch:w1"}));
  await_hello(notices);
  publish(ep, w.orders, event_json("/o/1", "ADDED", json{{"id", 1}}));
  auto before = read_notices(notices, {"ADDED /o/1"});
  INFO("before the kill: " << json(before.lines).dump() << " " << before.ended);
  REQUIRE(before.ended.empty());

  cluster.kill9(w.holder);
  cluster.await_converged(10s);
  const auto survivor = moved_from_holder(cluster, w);
  // Placed as the cluster places it now.
  std::vector<std::string> live;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    if (i != w.holder) live.push_back(cluster.node_id(i));
  CHECK(survivor == core::owner_of(live, "default", "watch:w1"));

  // It watches again (from a fresh baseline: its old position went with its
  // node), and its notices go on the replicated log: the session reads the
  // next one with the next cursor, told nothing.
  publish(ep, w.orders, event_json("/o/5", "ADDED", json{{"id", 5}}));
  auto after = read_notices(notices, {"ADDED /o/5"});
  INFO("after the kill: " << json(after.lines).dump() << " cursors " << json(after.cursors).dump() << " "
                          << after.ended);
  REQUIRE(after.ended.empty());
  CHECK(after.lines == std::vector<std::string>{"ADDED /o/5"});
  auto cursors = before.cursors;
  cursors.insert(cursors.end(), after.cursors.begin(), after.cursors.end());
  check_consecutive(cursors);

  // The node comes back with its stored watch: it does not restore it while
  // the survivor runs it; the survivor hands it back (placement prefers the
  // returning node) with its position, so one copy runs.
  cluster.restart(w.holder);
  cluster.await_converged(10s);
  std::map<std::string, int> counts;
  poll_until(15s, [&] {
    counts = node_counts(cluster, w.reader);
    return counts.size() == cluster.size() && running_on(counts) == cluster.node_id(w.holder);
  });
  INFO("watch counts after the return: " << describe(counts));
  CHECK(total_of(counts) == 1);
  CHECK(running_on(counts) == cluster.node_id(w.holder));
  auto listed = rows_named(list_watches(ep), "w1");
  CHECK(listed.size() == 1);

  publish(ep, w.orders, event_json("/o/6", "ADDED", json{{"id", 6}}));
  auto back = read_notices(notices, {"ADDED /o/6"});
  INFO("after the return: " << json(back.lines).dump() << " cursors " << json(back.cursors).dump() << " "
                            << back.ended);
  REQUIRE(back.ended.empty());
  // The watch resumes from the survivor's position, not from the one in
  // the returning node's store (before /o/5): /o/5 is not noticed again.
  // Its notices go on the same log.
  CHECK(back.lines == std::vector<std::string>{"ADDED /o/6"});
  auto all_lines = before.lines;
  all_lines.insert(all_lines.end(), after.lines.begin(), after.lines.end());
  all_lines.insert(all_lines.end(), back.lines.begin(), back.lines.end());
  cursors.insert(cursors.end(), back.cursors.begin(), back.cursors.end());
  check_consecutive(cursors);

  // The whole notice log, read afresh through every node: each notice the
  // session read, under the cursor it read it with.
  const auto from = epoch_of(cursors[0]) + ":" + std::to_string(cursor_of(cursors[0]).seq - 1);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    client::sse_stream late(cluster.endpoint(i), sse_target({"watch:w1"}, from));
    await_hello(late);
    auto all = read_notices_until(late, "ADDED /o/6");
    INFO("read through node " << i << ": " << json(all.lines).dump() << " cursors "
                              << json(all.cursors).dump() << " " << all.ended);
    CHECK(all.lines == all_lines);
    CHECK(all.cursors == cursors);
  }
}

TEST_CASE(
    "a watch moves back to its placement owner when that node joins, with its position: each change is "
    "noticed once, in one notice epoch, read alike through every node",
    "[cluster][watch][join]") {
  cluster_nodes cluster(3);
  constexpr std::size_t joiner = 2;
  cluster.kill9(joiner);
  cluster.await_converged(10s);

  // A watch whose notice stream the joiner will own once it is back: it
  // starts on a survivor meanwhile.
  const auto ids = cluster.ids();
  std::string name;
  for (int k = 0; name.empty(); ++k)
    if (core::owner_of(ids, "default", "watch:jw" + std::to_string(k)) == cluster.node_id(joiner))
      name = "jw" + std::to_string(k);
  const auto notice_stream = "watch:" + name;
  const auto orders = cluster.owned_stream(0, "orders");
  const auto ep = cluster.endpoint(0);
  publish(ep, orders, event_json("/o/0", "ADDED", json{{"id", 0}}));
  auto created = start_watch(
      ep, json{{"name", name}, {"uri", "stream://" + orders}, {"debounce_ms", 50}, {"max_wait_ms", 100}});
  INFO("POST /v1/watches: " << created.status << " " << created.body);
  REQUIRE(created.status == 201);
  auto counts = await_watch_total(cluster, 0, 1, 5s, cluster.size() - 1);
  INFO("watch counts: " << describe(counts));
  REQUIRE(!running_on(counts).empty());
  // Its first notice starts the notice stream; later ones follow it.
  std::string first_cursor;
  {
    client::sse_stream notices(ep, sse_target({notice_stream}));
    await_hello(notices);
    publish(ep, orders, event_json("/o/1", "ADDED", json{{"id", 1}}));
    auto got = read_notices(notices, {"ADDED /o/1"});
    INFO(json(got.lines).dump() << " " << got.ended);
    REQUIRE(got.ended.empty());
    first_cursor = got.cursors.back();
  }

  cluster.restart(joiner);
  cluster.await_converged(10s);
  // A change while the watch may be moving: noticed by the survivor before
  // it lets go, or by the joiner from the position handed over; never both,
  // never neither.
  publish(ep, orders, event_json("/o/2", "ADDED", json{{"id", 2}}));
  poll_until(15s, [&] {
    counts = node_counts(cluster, joiner);
    return running_on(counts) == cluster.node_id(joiner);
  });
  INFO("watch counts after the join: " << describe(counts));
  REQUIRE(running_on(counts) == cluster.node_id(joiner));

  publish(ep, orders, event_json("/o/3", "ADDED", json{{"id", 3}}));
  std::vector<std::vector<std::string>> cursors;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    client::sse_stream late(cluster.endpoint(i), sse_target({notice_stream}, first_cursor));
    await_hello(late);
    auto got = read_notices(late, {"ADDED /o/2", "ADDED /o/3"});
    INFO("read through node " << i << ": " << json(got.lines).dump() << " cursors "
                              << json(got.cursors).dump() << " " << got.ended);
    REQUIRE(got.ended.empty());
    CHECK(got.lines == std::vector<std::string>{"ADDED /o/2", "ADDED /o/3"});
    auto all = got.cursors;
    all.insert(all.begin(), first_cursor);
    check_consecutive(all);
    cursors.push_back(got.cursors);
  }
  for (const auto& c : cursors) CHECK(c == cursors.front());
}
