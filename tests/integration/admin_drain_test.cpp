// POST /admin/v1/drain starts the same graceful drain as SIGTERM: every
// session gets `closing`, /readyz answers 503, the process exits 0, and the
// action leaves an audit line.

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/raw_sse_session.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The stalled session's row in /admin/v1/sessions.
json session_of(const client::endpoint& ep, const std::string& token, const std::string& subject) {
  auto r = client::request(ep, "GET", "/admin/v1/sessions", {}, bearer(token));
  REQUIRE(r.status == 200);
  const auto body = parse_body(r);
  for (const auto& row : body["sessions"])
    if (row["subject"] == subject) return row;
  FAIL("no session of " << subject << " in " << r.body);
  return {};
}

}  // namespace

TEST_CASE("POST /admin/v1/drain sends closing to every session, fails readiness and exits 0", "[admin]") {
  // acme may publish fast enough to stall a session.
  tenant_node node("    limits: {publish_rate: 1000000, publish_burst: 1000000}\n", {"--drain-ms", "3000"});
  auto ep = node.endpoint();
  const auto ann = node.token(token_spec().sub("ann"));
  const auto ops = node.token(token_spec().tenant("ops").sub("oli").admin(true));
  publish(ep, "docs", event_json("/a", "ADDED", 1), bearer(ann));

  std::vector<std::unique_ptr<client::sse_stream>> sessions;
  sessions.push_back(std::make_unique<client::sse_stream>(ep, "/v1/sse?stream=docs", bearer(ann)));
  sessions.push_back(
      std::make_unique<client::sse_stream>(ep, "/v1/sse?stream=docs&stream=other", bearer(ann)));
  for (auto& s : sessions) await_hello(*s);

  // A session that stops reading until its socket is full and frames wait
  // in its queue behind a write that cannot finish: the drain then waits for
  // it (up to --drain-ms), which leaves time to ask /readyz.
  const auto stall = node.token(token_spec().sub("stall"));
  raw_sse_session stalled(ep, "/v1/sse?stream=bulk&access_token=" + stall, 5s);
  core::sse_message hello;
  REQUIRE(stalled.next(hello, 5s) == raw_sse_session::result::message);
  REQUIRE(hello.event == "hello");
  client::http_connection conn(ep);
  const std::string padding(1000, 'x');
  std::uint64_t queued = 0;
  for (int batch = 0; batch < 400 && queued < 50; ++batch) {
    json events = json::array();
    for (int k = 0; k < 10; ++k)
      events.push_back({{"path", "/bulk"}, {"data", {{"i", k}, {"pad", padding}}}});
    auto r = conn.request("POST", events_target("bulk"), events.dump(),
                          {{"Authorization", "Bearer " + ann}, {"Content-Type", "application/json"}});
    REQUIRE(r.status == 201);
    queued = session_of(ep, ops, "stall")["queue_frames"].get<std::uint64_t>();
  }
  REQUIRE(queued >= 50);
  // Probes send no token (issue 28): readiness needs none.
  REQUIRE(conn.request("GET", "/readyz").status == 200);

  auto drained = conn.request("POST", "/admin/v1/drain", "{}",
                              {{"Authorization", "Bearer " + ops}, {"Content-Type", "application/json"}});
  INFO(drained.body);
  REQUIRE(drained.status == 202);
  auto reply = parse_body(drained);
  CHECK(reply["draining"] == true);
  CHECK(reply["sessions"] == 3);
  // New connections are refused once the drain starts; open ones are answered.
  CHECK(conn.request("GET", "/readyz").status == 503);
  // The log says where the drain came from, not "signal 15" (issue 28).
  CHECK(node.process().await_log("\"via\":\"POST /admin/v1/drain\"", 5s));

  for (std::size_t i = 0; i < sessions.size(); ++i) {
    INFO("session " << i);
    auto m = next_non_heartbeat(*sessions[i], 10s);
    REQUIRE(m);
    CHECK(m->event == "closing");
    CHECK(message_json(*m)["reason"] == "shutdown");
  }
  CHECK(node.process().await_log("node.stopped", 15s));
  CHECK(node.process().terminate() == 0);

  std::ifstream audit(node.audit_path());
  std::string text{std::istreambuf_iterator<char>(audit), std::istreambuf_iterator<char>()};
  CHECK(text.find("\"action\":\"drain\"") != std::string::npos);
  CHECK(text.find("\"by\":\"oli\"") != std::string::npos);
  CHECK(text.find(ops) == std::string::npos);
}
