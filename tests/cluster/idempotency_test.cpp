// An Idempotency-Key belongs to its stream, wherever the stream lives: a
// retry through another node is answered from the owner's record, and when
// the owner drains the keys move with the log, so a retry after the handoff
// is still a replay and not a second event. A publish whose fate is unknown
// says so (503, "may have been stored"), and its retry settles it.

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
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

client::http_response post_keyed(const client::endpoint& ep, const std::string& stream,
                                 const std::string& body, const std::string& key) {
  return client::request(ep, "POST", events_target(stream), body,
                         {{"Content-Type", "application/json"}, {"Idempotency-Key", key}});
}

std::string cursor_in(const client::http_response& r) {
  auto body = parse_body(r);
  if (!body.is_object() || !body.contains("cursor") || !body["cursor"].is_string()) return {};
  return body["cursor"].get<std::string>();
}

bool replayed(const client::http_response& r) {
  auto it = r.headers.find("idempotent-replay");
  return it != r.headers.end() && it->second == "true";
}

}  // namespace

TEST_CASE("an Idempotency-Key is honoured through any node and survives its stream's owner draining",
          "[cluster][idempotency][drain]") {
  cluster_nodes cluster(3);
  const auto node1 = cluster.endpoint(0);
  const auto node2 = cluster.endpoint(1);
  // Owned by node 3: both first requests are forwarded, and the drain moves it.
  const auto stream = cluster.owned_stream(2, "idem");
  const auto body = event_json("/orders/1", "ADDED", json{{"amount", 7}});

  auto first = post_keyed(node1, stream, body, "k1");
  INFO("first publish through node 1: " << first.status << " " << first.body);
  REQUIRE(first.status == 201);
  CHECK_FALSE(replayed(first));
  const auto c = cursor_in(first);
  REQUIRE(!c.empty());

  auto retry = post_keyed(node2, stream, body, "k1");
  INFO("retry through node 2: " << retry.status << " " << retry.body);
  CHECK(retry.status == 200);
  CHECK(replayed(retry));
  CHECK(cursor_in(retry) == c);

  auto drain = client::request(cluster.endpoint(2), "POST", "/admin/v1/drain", "{}",
                               {{"Content-Type", "application/json"}});
  INFO("drain: " << drain.status << " " << drain.body);
  REQUIRE(drain.status == 202);
  REQUIRE(cluster.await_exit(2) == 0);
  cluster.await_converged(10s);

  auto after = post_keyed(node1, stream, body, "k1");
  INFO("retry through node 1 after the drain: " << after.status << " " << after.body);
  CHECK(after.status == 200);
  CHECK(replayed(after));
  CHECK(cursor_in(after) == c);

  auto history = read_history(node2, stream);
  INFO("history on node 2: " << json(history).dump());
  REQUIRE(history.size() == 1);
  CHECK(history[0]["cursor"] == c);

  // A new key after the drain appends the next event of the same log.
  auto next = post_keyed(node1, stream, body, "k2");
  INFO("new key through node 1 after the drain: " << next.status << " " << next.body);
  REQUIRE(next.status == 201);
  CHECK_FALSE(replayed(next));
  const auto n = cursor_in(next);
  REQUIRE(!n.empty());
  CHECK(epoch_of(n) == epoch_of(c));
  CHECK(cursor_of(n).seq == cursor_of(c).seq + 1);
  CHECK(read_history(node2, stream).size() == 2);
}

TEST_CASE(
    "a publish forwarded to an owner that stops answering gets 503 saying it may have been stored, and its "
    "retry with the same key gets exactly one event",
    "[cluster][idempotency][hung]") {
  cluster_nodes cluster(3);
  const auto stream = cluster.owned_stream(2, "unsure");
  REQUIRE(post_keyed(cluster.endpoint(0), stream, event_json("/e", "ADDED", json{{"i", 0}}), "u0").status ==
          201);
  const auto body = event_json("/e", "ADDED", json{{"i", 1}});
  client::http_response during;
  {
    // Node 3 stops in the middle of things: the forwarded publish may or
    // may not have reached its store, and the relay cannot tell which.
    hung_process hung(cluster.process(2).pid());
    during = client::request(cluster.endpoint(0), "POST", events_target(stream), body,
                             {{"Content-Type", "application/json"}, {"Idempotency-Key", "u1"}}, 20s);
  }
  INFO("publish while the owner is stopped: " << during.status << " " << during.body);
  REQUIRE(during.status == 503);
  CHECK(parse_body(during).value("error", "").find("may have been stored") != std::string::npos);
  CHECK(parse_body(during).value("error", "").find("same Idempotency-Key") != std::string::npos);

  // The retry, through any node once things settle, tells what happened.
  client::http_response retry;
  poll_until(20s, [&] {
    retry = post_keyed(cluster.endpoint(1), stream, body, "u1");
    return retry.status == 201 || retry.status == 200;
  });
  INFO("the retry: " << retry.status << " " << retry.body);
  REQUIRE((retry.status == 201 || retry.status == 200));
  client::http_response again;
  poll_until(20s, [&] {
    again = post_keyed(cluster.endpoint(0), stream, body, "u1");
    return again.status != 503;
  });
  CHECK(again.status == 200);
  CHECK(replayed(again));
  CHECK(cursor_in(again) == cursor_in(retry));
}
