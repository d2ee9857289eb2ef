// A drained owner hands its streams, log and epoch included, to their next
// owners before it lets its sessions go: its sessions get `closing` naming
// another node, resume there from their last cursor, and nobody anywhere
// loses, repeats or resyncs an event. The stream's cursors stay valid.

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
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

std::string describe(const collected& got) {
  std::string out =
      std::string(to_string(got.ended)) + " after " + std::to_string(got.events.size()) + " events";
  if (got.control) out += ", by event " + got.control->event + " " + got.control->data;
  return out;
}

}  // namespace

TEST_CASE(
    "draining a stream's owner hands the stream over: sessions resume anywhere with no loss, no "
    "duplicate and no resync, in the same epoch",
    "[cluster][drain]") {
  cluster_nodes cluster(3);
  // The first node takes the stream over, so its GET /v1/streams/{s} is the
  // new owner's own answer.
  const auto stream = cluster.owned_stream(2, "drain", 0);

  auto sessions = open_sessions(cluster, {0, 1, 2}, 2, stream);
  auto acked = publish_numbered(cluster.endpoint(0), stream, 1, 30);
  std::vector<std::vector<data_event>> seen(sessions.size());
  for (std::size_t k = 0; k < sessions.size(); ++k) {
    INFO("session " << k << " on node " << sessions[k].node);
    auto got = collect_data_events(*sessions[k].stream, 30, 10s);
    INFO(describe(got));
    REQUIRE(got.ended == collected::end::count_reached);
    REQUIRE(cursors_of(got.events) == acked);
    seen[k] = std::move(got.events);
  }

  auto drain = client::request(cluster.endpoint(2), "POST", "/admin/v1/drain", "{}",
                               {{"Content-Type", "application/json"}});
  INFO("drain: " << drain.status << " " << drain.body);
  REQUIRE(drain.status == 202);

  // The drained node's sessions are sent to a live node and resume there,
  // one through Last-Event-ID (as EventSource does), one through since=.
  const std::vector<std::string> live_nodes{"http://" + cluster.http_address(0),
                                            "http://" + cluster.http_address(1)};
  bool by_header = true;
  for (std::size_t k = 0; k < sessions.size(); ++k) {
    auto& s = sessions[k];
    if (s.node != 2) continue;
    INFO("session " << k << " on the drained node");
    auto m = next_non_heartbeat(*s.stream, 10s);
    REQUIRE(m);
    INFO("got event '" << m->event << "': " << m->data);
    REQUIRE(m->event == "closing");
    auto closing = message_json(*m);
    CHECK(closing["reason"] == "shutdown");
    REQUIRE(closing.contains("reconnect_url"));
    const auto url = closing["reconnect_url"].get<std::string>();
    CHECK((url == live_nodes[0] || url == live_nodes[1]));

    const auto last = s.stream->last_event_id();
    CHECK(last == acked.back());
    const auto ep = client::parse_endpoint(url);
    s.stream = by_header ? std::make_unique<client::sse_stream>(ep, sse_target({stream}),
                                                                client::header_list{{"Last-Event-ID", last}})
                         : std::make_unique<client::sse_stream>(ep, sse_target({stream}, last));
    s.node = ep.port == cluster.endpoint(0).port ? 0 : 1;
    by_header = !by_header;
    await_hello(*s.stream);
  }
  CHECK(cluster.await_exit(2) == 0);
  cluster.await_converged(10s);

  const auto more = publish_numbered(cluster.endpoint(0), stream, 31, 20);
  for (const auto& c : more) CHECK(epoch_of(c) == epoch_of(acked.front()));
  acked.insert(acked.end(), more.begin(), more.end());

  for (std::size_t k = 0; k < sessions.size(); ++k) {
    INFO("session " << k << ", now on node " << sessions[k].node);
    auto got = collect_data_events(*sessions[k].stream, more.size(), 10s);
    INFO(describe(got));
    CHECK(got.ended == collected::end::count_reached);
    seen[k].insert(seen[k].end(), got.events.begin(), got.events.end());
    CHECK(cursors_of(seen[k]) == acked);
  }

  // Same epoch, same head: the log moved, it did not start over.
  auto info = stream_info_of(cluster.endpoint(0), stream);
  INFO("GET /v1/streams/" << stream << " on node 0: " << info.status << " " << info.body.dump());
  REQUIRE(info.status == 200);
  CHECK(info.body["epoch"] == epoch_of(acked.front()));
  CHECK(info.body["head"] == acked.back());
  CHECK(info.body["first"] == acked.front());
}
