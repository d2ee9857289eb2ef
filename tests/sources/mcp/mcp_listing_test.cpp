// notifications/resources/list_changed against real servers (issue 24): the
// connector lists again, and a watch on a resource the server stopped
// listing ends as gone (for good, with a notice), while other watches go on.
// Legacy (unsolicited notifications, v1 SDK) over stdio, and 2026-07-28
// (opted into on each listen stream) over stdio and Streamable HTTP.

#include <catch2/catch.hpp>

#include "tests/sources/mcp/mcp_test_support.hpp"

using namespace tidings::sources;
using namespace tidings::sources::mcp;
using namespace tidings::sources::mcp::test;

namespace {

constexpr const char* extra = "tidings-test://extra";

// `c` is started; the server has tidings-test://state always and lists
// tidings-test://extra after the add_extra tool, until remove_extra.
void follow_listing(boost::asio::io_context& ioc, mcp_connector& c) {
  CHECK_FALSE(lists_resource(c, extra));
  // A watch on something else first: a modern server sends list_changed
  // only on a listen stream that asked for it.
  auto state = c.open("tidings-test://state", nullptr);
  watch_log ws;
  state->subscribe(ws.handlers());
  REQUIRE(run_until(ioc, [&] { return ws.subscribed == 1 || ws.ended; }));
  REQUIRE(ws.subscribed == 1);

  REQUIRE(call_tool(ioc, c, "add_extra").ok());
  REQUIRE(run_until(ioc, [&] { return lists_resource(c, extra); }));
  auto up = c.open(extra, nullptr);
  watch_log w;
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 1 || w.ended || w.gone; }));
  REQUIRE(w.subscribed == 1);

  REQUIRE(call_tool(ioc, c, "remove_extra").ok());
  REQUIRE(run_until(ioc, [&] { return w.gone == 1 || w.ended; }));
  CHECK(w.gone == 1);
  CHECK(w.ended == 0);
  CHECK(w.reason == c.name() + ": " + extra + " was removed: the server no longer lists it");
  CHECK_FALSE(lists_resource(c, extra));
  CHECK(lists_resource(c, "tidings-test://state"));
  CHECK(ws.ended == 0);
  CHECK(ws.gone == 0);

  // A source subscribing again learns it at once instead of watching nothing.
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.gone == 2 || w.subscribed == 2 || w.ended; }));
  CHECK(w.gone == 2);

  // Listed again, it can be watched again.
  REQUIRE(call_tool(ioc, c, "add_extra").ok());
  REQUIRE(run_until(ioc, [&] { return lists_resource(c, extra); }));
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 2 || w.gone == 3 || w.ended; }));
  CHECK(w.subscribed == 2);
  up->close();
  state->close();
}

}  // namespace

TEST_CASE("list_changed from a legacy server over stdio: listing refreshed, a removed resource's watch gone",
          "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  mcp_connector c(ioc, stdio_config("legacy", {"node", servers_dir() + "/legacy-server.mjs"}));
  start_connector(ioc, c);
  REQUIRE(c.session()->protocol_era() == era::legacy);
  follow_listing(ioc, c);
  c.stop();
}

TEST_CASE("list_changed from a 2026-07-28 server over stdio and HTTP", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  SECTION("stdio") {
    mcp_connector c(ioc, stdio_config("v2", {"node", servers_dir() + "/v2-server.mjs", "stdio"}));
    start_connector(ioc, c);
    REQUIRE(c.session()->protocol_era() == era::modern);
    follow_listing(ioc, c);
    c.stop();
  }
  SECTION("http") {
    http_server server(ioc, {"node", servers_dir() + "/v2-server.mjs", "http"});
    mcp_connector c(ioc, http_config("v2-http", server.url()));
    start_connector(ioc, c);
    REQUIRE(c.session()->protocol_era() == era::modern);
    follow_listing(ioc, c);
    c.stop();
  }
}
