// An MCP server through the real tidingsd (issue 4): our 2026-07-28 test
// server over Streamable HTTP (tests/mcp-servers/v2-server.mjs), whose state
// the test changes with a tool call on a connection of its own. Listing,
// reading, a watch's notice, an SSE session by URI, the upstream side seeing
// the subscriptions closed when the last subscriber leaves, fail fast on an
// unknown resource, a resource that the server stops listing
// (notifications/resources/list_changed), and a change made while the node
// was down. The connector
// itself is tested against the npm servers (legacy protocol) and over stdio
// in tests/sources/mcp/.

#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/sources/mcp/mcp_test_support.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
namespace mcp = tidings::sources::mcp;
using nlohmann::json;

json get_json(const client::endpoint& ep, const std::string& target) {
  auto r = client::request(ep, "GET", target);
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

}  // namespace

TEST_CASE("an MCP server's resources through tidingsd: notices, SSE by uri, unsubscribe, restart",
          "[sources][mcp]") {
  mcp::test::require_servers();
  boost::asio::io_context ioc;
  mcp::test::http_server server(ioc, {"node", "v2-server.mjs", "http"});
  // The test's own MCP connection, to change the server's state.
  mcp::mcp_connector writer(ioc, mcp::test::http_config("writer", server.url()));
  mcp::test::start_connector(ioc, writer);
  auto bump = [&] { REQUIRE(mcp::test::call_tool(ioc, writer, "bump").ok()); };

  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n  mcp:\n    v2: {url: \"" << server.url() << "\"}\n";
  auto data = dir.path() / "data";
  std::vector<std::string> args{"--config", cfg.string()};
  std::string last_notice;
  {
    tidingsd_process node(data, args);
    auto ep = node.endpoint();

    json state_entry;
    for (const auto& r : get_json(ep, "/v1/resources"))
      if (r["uri"] == "tidings-test://state") state_entry = r;
    REQUIRE(state_entry.is_object());
    CHECK(state_entry["server"] == "v2");
    CHECK(state_entry["subscribable"] == true);
    CHECK(state_entry["example"] == "await watch_start(name=\"counter\", uri=\"tidings-test://state\")");
    CHECK(get_json(ep, "/v1/resources/read?uri=" + client::url_encode("tidings-test://state")) ==
          json{{"counter", 0}});

    // Fail fast: the server's own error, inside the call.
    auto unknown = start_watch(ep, {{"name", "nope"}, {"uri", "tidings-test://nope"}});
    CHECK(unknown.status == 502);
    INFO(unknown.body);
    CHECK(json::parse(unknown.body)["error"].get<std::string>().find("tidings-test://nope") !=
          std::string::npos);

    auto opened = server.line_count();
    CHECK(start_watch_ok(
              ep, {{"name", "counter"}, {"uri", "tidings-test://state"}, {"debounce_ms", 50}})["shape"] ==
          "state");
    client::sse_stream notices(ep, sse_target({"watch:counter"}));
    await_hello(notices);
    client::sse_stream events(ep, "/v1/sse?uri=" + client::url_encode("tidings-test://events"));
    await_hello(events);
    CHECK(server.await_line("listen-open", opened));

    bump();
    auto notice = await_notices(notices, 1, 10s);
    REQUIRE(notice.size() == 1);
    CHECK(notice_lines(notice[0]) == std::vector<std::string>{"MODIFIED counter (0→1)"});
    last_notice = notice[0].cursor;
    auto got = collect_data_events(events, 1, 10s);
    REQUIRE(got.events.size() == 1);
    CHECK(got.events[0].type == "BUMPED");
    CHECK(got.events[0].data["uri"] == "tidings-test://events");

    // The session leaves: its source ends and closes its listen stream upstream.
    auto before_close = server.line_count();
    events.close();
    CHECK(server.await_line("listen-closed", before_close));

    // notifications/resources/list_changed: a resource the server starts
    // listing can be watched; once it stops, the watch ends with a notice.
    REQUIRE(mcp::test::call_tool(ioc, writer, "add_extra").ok());
    REQUIRE(node.await_log("\"mcp.listing.changed\"", 10s));
    client::sse_stream extra(ep, "/v1/sse?uri=" + client::url_encode("tidings-test://extra"));
    await_hello(extra);
    start_watch_ok(ep, {{"name", "extra"}, {"uri", "tidings-test://extra"}});
    REQUIRE(mcp::test::call_tool(ioc, writer, "remove_extra").ok());
    auto removed = await_event(extra, [](const data_event& e) { return e.type == "ERROR"; });
    REQUIRE(removed);
    CHECK(removed->data["message"] == "v2: tidings-test://extra was removed: the server no longer lists it");
    CHECK(removed->data["source_failed"] == true);
    REQUIRE(node.await_log("\"watch.failed\"", 10s));
    for (const auto& w : list_watches(ep))
      if (w["name"] == "extra") CHECK(w.value("state", "") == "failed");
    // Starting over on it is refused with the same notice.
    auto again = start_watch(ep, {{"name", "extra2"}, {"uri", "tidings-test://extra"}});
    CHECK(again.status == 502);
    CHECK(json::parse(again.body)["error"] ==
          "v2: tidings-test://extra was removed: the server no longer lists it");
    CHECK(node.terminate() == 0);
  }
  // Changed while the node was down: the restored watch reports it once.
  bump();
  {
    tidingsd_process node(data, args);
    auto ep = node.endpoint();
    client::sse_stream notices(ep, sse_target({"watch:counter"}, last_notice));
    await_hello(notices);
    auto missed = await_notices(notices, 1, 15s);
    REQUIRE(missed.size() == 1);
    CHECK(notice_lines(missed[0]) == std::vector<std::string>{"MODIFIED counter (1→2)"});
    // Stopping the watch unsubscribes upstream.
    auto before_stop = server.line_count();
    CHECK(stop_watch(ep, "counter"));
    CHECK(server.await_line("listen-closed", before_stop));
  }
  writer.stop();
}
