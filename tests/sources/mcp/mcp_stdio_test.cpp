// The MCP connector over stdio against real servers: server-memory and
// server-everything (legacy 2025-11-25, as published on npm) and our own
// 2026-07-28 server on the official v2 SDK (tests/mcp-servers/v2-server.mjs).

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/sources/mcp/mcp_test_support.hpp"

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

struct file_cleanup {
  std::string path;
  ~file_cleanup() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("memory over stdio: list, read, subscribe, update, unsubscribe, stop", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  file_cleanup file{temp_file("tidings-memory")};
  mcp_connector c(ioc, memory_config(file.path));
  start_connector(ioc, c);
  CHECK(c.session()->protocol_era() == era::legacy);
  CHECK(c.accepts_any_uri());
  auto list = c.resources();
  const resource_info* graph = find(list, "memory://knowledge-graph");
  REQUIRE(graph);
  CHECK(graph->server == "memory");
  CHECK(graph->subscribable);
  CHECK_FALSE(graph->template_);
  CHECK(graph->mime_type == "application/json");

  auto first = read_now(ioc, [&](auto done) { c.read("memory://knowledge-graph", done); });
  REQUIRE(first.result);
  CHECK(first.result->mime_type == "application/json");

  std::string error;
  auto up = c.open("memory://knowledge-graph", &error);
  REQUIRE(up);
  watch_log w;
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 1 || w.ended; }));
  REQUIRE(w.subscribed == 1);

  auto reply = call_tool(ioc, c, "create_entities",
                         R"({"entities":[{"name":"probe","entityType":"test","observations":["hello"]}]})");
  CHECK(reply.ok());
  REQUIRE(run_until(ioc, [&] { return w.updated >= 1; }));
  auto after = read_now(ioc, [&](auto done) { up->read(done); });
  REQUIRE(after.result);
  CHECK(after.result->text.find("\"probe\"") != std::string::npos);

  up->close();
  CHECK(w.ended == 0);

  SECTION("reading an unknown URI fails fast with the server's error text") {
    auto missing = read_now(ioc, [&](auto done) { c.read("memory://nope", done); });
    CHECK_FALSE(missing.result);
    CHECK(missing.error.rfind("memory: resources/read failed: ", 0) == 0);
    CHECK(missing.error.find("(code ") != std::string::npos);
  }

  pid_t pid = c.session()->child_pid();
  REQUIRE(pid > 0);
  c.stop();
  CHECK(process_gone(pid));
}

TEST_CASE("a killed stdio server ends the watch, subscribing again reconnects", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  file_cleanup file{temp_file("tidings-memory")};
  mcp_connector c(ioc, memory_config(file.path));
  start_connector(ioc, c);
  auto up = c.open("memory://knowledge-graph", nullptr);
  watch_log w;
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 1; }));

  pid_t pid = c.session()->child_pid();
  REQUIRE(pid > 0);
  ::kill(pid, SIGKILL);
  REQUIRE(run_until(ioc, [&] { return w.ended == 1; }));
  CHECK(w.reason.find("memory: connection lost") == 0);
  CHECK(w.reason.find("signal 9") != std::string::npos);
  CHECK(process_gone(pid));

  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 2 || w.ended == 2; }));
  REQUIRE(w.subscribed == 2);
  pid_t second = c.session()->child_pid();
  CHECK(second != pid);
  call_tool(ioc, c, "create_entities",
            R"({"entities":[{"name":"again","entityType":"t","observations":[]}]})");
  REQUIRE(run_until(ioc, [&] { return w.updated >= 1; }));
  up.reset();
  c.stop();
  CHECK(process_gone(second));
}

TEST_CASE("a server that cannot be started is an error, not a crash", "[mcp]") {
  boost::asio::io_context ioc;
  mcp_connector c(ioc, stdio_config("broken", {"/nonexistent/mcp-server"}));
  std::optional<std::string> error;
  c.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(ioc, [&] { return error.has_value(); }));
  CHECK(error->rfind("broken: ", 0) == 0);
  auto up = c.open("x://y", nullptr);
  watch_log w;
  up->subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.ended == 1; }));
  CHECK(w.subscribed == 0);
  std::string bad;
  CHECK_FALSE(c.open("not a uri", &bad));
  CHECK(bad.rfind("broken: ", 0) == 0);
}

TEST_CASE("everything over stdio: templates, subscribe, toggle-subscriber-updates", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  mcp_connector c(ioc, stdio_config("everything", {"node", module_path("server-everything"), "stdio"}));
  start_connector(ioc, c);
  auto list = c.resources();
  const std::string doc = "demo://resource/static/document/architecture.md";
  REQUIRE(find(list, doc));
  CHECK(find(list, doc)->subscribable);
  const resource_info* tpl = find(list, "demo://resource/dynamic/text/{resourceId}");
  REQUIRE(tpl);
  CHECK(tpl->template_);

  auto up = c.open(doc, nullptr);
  watch_log w;
  subscribe_until_updated(ioc, c, *up, w);
  auto r = read_now(ioc, [&](auto done) { up->read(done); });
  REQUIRE(r.result);
  CHECK(r.result->mime_type == "text/markdown");
  // close() sends resources/unsubscribe, which this server reports back.
  bool unsubscribed = false;
  c.session()->observe_notifications([&](const std::string& method, const json& params) {
    if (method == "notifications/message" &&
        params.value("data", json()).dump().find("Received Unsubscribe Resource request") !=
            std::string::npos)
      unsubscribed = true;
  });
  up->close();
  CHECK(run_until(ioc, [&] { return unsubscribed; }));
  CHECK(call_tool(ioc, c, "toggle-subscriber-updates").ok());

  pid_t pid = c.session()->child_pid();
  c.stop();
  CHECK(process_gone(pid));
}

TEST_CASE("2026-07-28 over stdio: listen, acknowledged, routed updates, cancel, complete", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  mcp_connector c(ioc, stdio_config("v2", {"node", servers_dir() + "/v2-server.mjs", "stdio"}));
  start_connector(ioc, c);
  CHECK(c.session()->protocol_era() == era::modern);
  CHECK(c.session()->protocol_version() == "2026-07-28");
  auto list = c.resources();
  const resource_info* state = find(list, "tidings-test://state");
  REQUIRE(state);
  CHECK(state->example == R"(await watch_start(name="counter", uri="tidings-test://state"))");
  const resource_info* events = find(list, "tidings-test://events");
  REQUIRE(events);
  CHECK(events->mime_type == "application/vnd.asyncai.events+json");

  auto state_up = c.open("tidings-test://state", nullptr);
  auto events_up = c.open("tidings-test://events", nullptr);
  watch_log ws, we;
  state_up->subscribe(ws.handlers());
  events_up->subscribe(we.handlers());
  REQUIRE(run_until(ioc, [&] { return (ws.subscribed && we.subscribed) || ws.ended || we.ended; }));
  REQUIRE(ws.subscribed == 1);
  REQUIRE(we.subscribed == 1);

  CHECK(call_tool(ioc, c, "bump").ok());
  REQUIRE(run_until(ioc, [&] { return ws.updated >= 1 && we.updated >= 1; }));
  auto s = read_now(ioc, [&](auto done) { state_up->read(done); });
  REQUIRE(s.result);
  CHECK(json::parse(s.result->text)["counter"].get<int>() >= 1);
  auto e = read_now(ioc, [&](auto done) { events_up->read(done); });
  REQUIRE(e.result);
  CHECK(e.result->mime_type == "application/vnd.asyncai.events+json");
  CHECK(json::parse(e.result->text)["events"].back()["type"] == "BUMPED");

  // close() cancels the state listen with notifications/cancelled; the
  // events listen keeps receiving its own updates.
  state_up->close();
  int events_before = we.updated;
  int state_before = ws.updated;
  CHECK(call_tool(ioc, c, "bump").ok());
  REQUIRE(run_until(ioc, [&] { return we.updated > events_before; }));
  // The server announces state before events: nothing reached the closed one.
  CHECK(ws.updated == state_before);
  auto received = call_tool(ioc, c, "received");
  REQUIRE(received.ok());
  auto seen = json::parse(received.result["content"][0]["text"].get<std::string>());
  bool cancelled = false;
  for (const auto& entry : seen)
    if (entry.value("method", "") == "notifications/cancelled" && entry.contains("requestId"))
      cancelled = true;
  CHECK(cancelled);

  SECTION("reading an unknown URI returns the server's error") {
    auto missing = read_now(ioc, [&](auto done) { c.read("tidings-test://nope", done); });
    CHECK_FALSE(missing.result);
    CHECK(missing.error.find("v2: resources/read failed: Resource not found") == 0);
  }

  SECTION("a server shutting down completes the listen: ended, then resubscribe reconnects") {
    pid_t pid = c.session()->child_pid();
    ::kill(pid, SIGTERM);
    REQUIRE(run_until(ioc, [&] { return we.ended == 1; }));
    CHECK(we.reason.find("(complete)") != std::string::npos);
    // The source resubscribes after `ended`; one attempt may still meet the
    // exiting process (ended: connection lost), the next one reconnects.
    for (int attempt = 0; attempt < 3 && we.subscribed < 2; ++attempt) {
      int ended_before = we.ended;
      events_up->subscribe(we.handlers());
      REQUIRE(run_until(ioc, [&] { return we.subscribed == 2 || we.ended > ended_before; }));
    }
    CHECK(we.subscribed == 2);
    CHECK(c.session()->child_pid() != pid);
  }

  pid_t pid = c.session()->child_pid();
  events_up.reset();
  c.stop();
  CHECK(process_gone(pid));
}

TEST_CASE("malformed and oversized lines from a server are logged and ignored", "[mcp]") {
  require_servers();
  boost::asio::io_context ioc;
  // Garbage and a line over the cap first, then a real server in the same process.
  auto cfg = stdio_config(
      "noisy", {"sh", "-c",
                "echo 'not json'; echo '{\"jsonrpc\":'; head -c 70000 /dev/zero | tr '\\0' x; echo; "
                "exec node v2-server.mjs stdio"});
  cfg.max_message_bytes = 65536;
  mcp_connector c(ioc, cfg);
  start_connector(ioc, c);
  CHECK(c.session()->protocol_era() == era::modern);
  auto r = read_now(ioc, [&](auto done) { c.read("tidings-test://state", done); });
  CHECK(r.result);
  pid_t pid = c.session()->child_pid();
  c.stop();
  CHECK(process_gone(pid));
}

TEST_CASE("a server that never answers times out instead of hanging", "[mcp]") {
  boost::asio::io_context ioc;
  auto cfg = stdio_config("mute", {"sh", "-c", "exec sleep 30"});
  cfg.request_timeout = std::chrono::milliseconds(200);
  mcp_connector c(ioc, cfg);
  std::optional<std::string> error;
  c.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(ioc, [&] { return error.has_value(); }));
  // No answer to the probe means legacy; the handshake then times out too.
  CHECK(error->rfind("mute: initialize failed: initialize timed out after 0.2 s", 0) == 0);
  CHECK(c.session()->child_pid() == -1);
}
