// The MCP connector over Streamable HTTP against real servers on loopback:
// server-everything (legacy: Mcp-Session-Id, GET stream, SSE bodies, DELETE)
// and our 2026-07-28 server (listen streams, cancel by closing the stream).

#include <catch2/catch.hpp>

#include <csignal>

#include <nlohmann/json.hpp>

#include "net/tls_context.hpp"
#include "tests/sources/mcp/mcp_test_support.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

using namespace tidings::sources;
using namespace tidings::sources::mcp;
using namespace tidings::sources::mcp::test;
using nlohmann::json;

namespace {

const resource_info* find(const std::vector<resource_info>& list, const std::string& uri) {
  for (const auto& r : list)
    if (r.uri == uri) return &r;
  return nullptr;
}

// Subscribes to server-everything's architecture document, waits for an
// update (unsolicited, on the legacy GET stream), reads it, and stops.
void watch_document(boost::asio::io_context& ioc, mcp_connector& c, const std::string& doc) {
  auto up = c.open(doc, nullptr);
  REQUIRE(up);
  watch_log w;
  subscribe_until_updated(ioc, c, *up, w);
  auto r = read_now(ioc, [&](auto done) { up->read(done); });
  REQUIRE(r.result);
  CHECK(r.result->text.find("Architecture") != std::string::npos);
  up->close();
  CHECK(call_tool(ioc, c, "toggle-subscriber-updates").ok());
}

}  // namespace

TEST_CASE("everything over Streamable HTTP (legacy): session, GET stream, updates, DELETE", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  http_server server(ioc, {"node", servers_dir() + "/everything-http.mjs"});
  mcp_connector c(ioc, http_config("everything-http", server.url()));
  start_connector(ioc, c);
  CHECK(c.session()->protocol_era() == era::legacy);
  const std::string doc = "demo://resource/static/document/architecture.md";
  auto list = c.resources();
  REQUIRE(find(list, doc));
  CHECK(find(list, doc)->subscribable);

  watch_document(ioc, c, doc);

  auto missing = read_now(ioc, [&](auto done) { c.read("demo://nope", done); });
  CHECK_FALSE(missing.result);
  CHECK(missing.error.rfind("everything-http: resources/read failed: ", 0) == 0);

  std::size_t before = server.line_count();
  c.stop();
  // The legacy session ends with DELETE, which the server logs.
  CHECK(server.await_line("session termination", before));
}

TEST_CASE("everything over HTTPS: verified against the CA file, and refused without it, naming why",
          "[mcp]") {
  require_servers();
  tidings::testing::temp_dir dir;
  tidings::testing::test_ca ca(dir.path().string(), "mcp");
  const auto leaf = ca.issue("localhost", {"localhost", {"DNS:localhost"}});
  boost::asio::io_context ioc;
  http_server server(ioc, {"node", servers_dir() + "/everything-http.mjs"},
                     {{"TIDINGS_TLS_CERT", leaf.cert}, {"TIDINGS_TLS_KEY", leaf.key}});
  REQUIRE(server.url().rfind("https://localhost:", 0) == 0);
  {
    // The system store does not know the test's CA.
    mcp_connector refused(ioc, http_config("remote", server.url()));
    const auto error = start_outcome(ioc, refused);
    CHECK(error.find("TLS handshake with localhost:") != std::string::npos);
    CHECK(error.find("failed: unknown CA (") != std::string::npos);
    refused.stop();
  }
  auto cfg = http_config("remote", server.url());
  cfg.tls.ca_file = ca.files().cert;
  std::string error;
  cfg.tls_context = tidings::net::make_tls_client_context(cfg.tls, &error);
  REQUIRE(cfg.tls_context);
  mcp_connector c(ioc, cfg);
  start_connector(ioc, c);
  watch_document(ioc, c, "demo://resource/static/document/architecture.md");
  c.stop();
}

TEST_CASE("2026-07-28 over Streamable HTTP: listen stream, updates, cancel by closing", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  http_server server(ioc, {"node", servers_dir() + "/v2-server.mjs", "http"});
  mcp_connector c(ioc, http_config("v2-http", server.url()));
  start_connector(ioc, c);
  CHECK(c.session()->protocol_era() == era::modern);
  auto list = c.resources();
  REQUIRE(find(list, "tidings-test://state"));
  REQUIRE(find(list, "tidings-test://events"));

  auto up = c.open("tidings-test://events", nullptr);
  watch_log w;
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 1 || w.ended; }));
  REQUIRE(w.subscribed == 1);
  CHECK(server.await_line("listen-open"));
  CHECK(call_tool(ioc, c, "bump").ok());
  REQUIRE(run_until(ioc, [&] { return w.updated >= 1; }));
  auto r = read_now(ioc, [&](auto done) { up->read(done); });
  REQUIRE(r.result);
  CHECK(r.result->mime_type == "application/vnd.asyncai.events+json");
  CHECK(json::parse(r.result->text)["events"][0]["seq"] == 1);

  auto missing = read_now(ioc, [&](auto done) { c.read("tidings-test://nope", done); });
  CHECK_FALSE(missing.result);
  CHECK(missing.error.find("v2-http: resources/read failed: Resource not found") == 0);

  SECTION("close() closes the listen stream") {
    up->close();
    CHECK(server.await_line("listen-closed"));
  }
  SECTION("a server going away ends the watch; subscribing again reconnects") {
    ::kill(server.pid(), SIGKILL);
    REQUIRE(run_until(ioc, [&] { return w.ended == 1; }));
    CHECK(w.reason.rfind("v2-http: subscriptions/listen", 0) == 0);
  }
  c.stop();
}

TEST_CASE("an unreachable HTTP server is a start error", "[mcp]") {
  boost::asio::io_context ioc;
  // Port 1 on loopback: nothing listens there, the connect is refused.
  mcp_connector c(ioc, http_config("down", "http://127.0.0.1:1/mcp"));
  std::optional<std::string> error;
  c.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(ioc, [&] { return error.has_value(); }));
  CHECK(error->rfind("down: ", 0) == 0);
  CHECK_FALSE(c.accepts_any_uri());
  mcp_connector bad(ioc, http_config("bad", "ftp://example/"));
  error.reset();
  bad.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(ioc, [&] { return error.has_value(); }));
  CHECK(error->rfind("bad: bad url", 0) == 0);
}
