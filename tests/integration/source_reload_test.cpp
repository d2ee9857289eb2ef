// Upstreams changed by a reload, live (issue 8), through the real tidingsd
// and its file source: a files root added by reload becomes subscribable, a
// changed files connector restarts its sources with their subscribers kept
// (the stream continues, no resync), and a removed one ends its sources with
// an ERROR event naming the removal.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

std::string files_config(const std::vector<std::filesystem::path>& roots) {
  std::string list;
  for (const auto& r : roots) list += (list.empty() ? "" : ", ") + r.string();
  return "log-level: info\nupstreams:\n  files:\n    roots: [" + list + "]\n";
}

// A node started with --config on a file the test rewrites before each reload.
struct reloading_node {
  temp_dir dir;
  std::filesystem::path cfg = dir.path() / "tidings.yaml";
  std::optional<tidingsd_process> node;

  explicit reloading_node(const std::string& yaml) {
    std::ofstream(cfg) << yaml;
    node.emplace(dir.path() / "data", std::vector<std::string>{"--config", cfg.string()});
  }
  client::endpoint ep() const { return node->endpoint(); }

  // POST /admin/v1/reload with the file rewritten to `yaml`; the reply.
  json reload(const std::string& yaml) const {
    std::ofstream(cfg, std::ios::trunc) << yaml;
    auto r = client::request(ep(), "POST", "/admin/v1/reload", "{}", {{"Content-Type", "application/json"}});
    INFO(r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
};

json sources_now(const client::endpoint& ep) {
  auto r = client::request(ep, "GET", "/v1/sources");
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

}  // namespace

TEST_CASE("a reload that adds a files root makes its files subscribable at once", "[sources][file][reload]") {
  reloading_node n("log-level: info\n");
  temp_dir files;
  auto file = write_watched_file(files.path(), R"({"replicas":1})");
  auto root = file.parent_path();
  auto uri = "file://" + file.string();

  auto before = start_watch(n.ep(), {{"name", "app"}, {"uri", uri}});
  CHECK(before.status == 400);

  auto reply = n.reload(files_config({root}));
  CHECK(reply["restart_needed"] == json::array());
  CHECK(reply["upstreams"]["added"] == json::array({"files"}));
  CHECK(reply["upstreams"]["removed"] == json::array());
  CHECK(reply["upstreams"]["changed"] == json::array());

  client::sse_stream session(n.ep(), uri_target(uri));
  await_hello(session);
  replace_file(file, R"({"replicas":2})");
  auto changed = await_event(session, [](const data_event& e) { return e.data.value("new", json()) == 2; });
  CHECK(changed);
  CHECK(n.node->await_log("\"node.reloaded\"", 5s));
}

TEST_CASE("a reload that changes the files connector keeps its sessions on the same stream",
          "[sources][file][reload]") {
  temp_dir files;
  auto root = files.path() / "etc";
  auto other = files.path() / "other";
  std::filesystem::create_directories(root);
  std::filesystem::create_directories(other);
  auto file = root / "app.json";
  std::ofstream(file) << R"({"replicas":1,"image":"app:1"})";
  auto uri = "file://" + file.string();
  reloading_node n(files_config({root}));

  client::sse_stream session(n.ep(), uri_target(uri));
  auto hello = await_hello(session);
  auto running = sources_now(n.ep());
  REQUIRE(running.size() == 1);
  auto stream = running[0]["stream"].get<std::string>();
  replace_file(file, R"({"replicas":2,"image":"app:1"})");
  auto first = await_event(session, [](const data_event& e) { return e.data.value("new", json()) == 2; });
  REQUIRE(first);
  CHECK(first->stream == stream);

  auto reply = n.reload(files_config({root, other}));
  CHECK(reply["restart_needed"] == json::array());
  CHECK(reply["upstreams"]["changed"] == json::array({"files"}));
  CHECK(reply["upstreams"]["added"] == json::array());

  // The restarted source diffs its first read against the stored snapshot,
  // so this change comes out once whether it lands before or after it.
  replace_file(file, R"({"replicas":2,"image":"app:2"})");
  auto second =
      await_event(session, [](const data_event& e) { return e.data.value("new", json()) == "app:2"; });
  REQUIRE(second);
  CHECK(second->stream == stream);
  // The stream continued: the next seq after the first change's.
  CHECK(cursor_of(second->cursor).seq == cursor_of(first->cursor).seq + 1);

  replace_file(file, R"({"replicas":3,"image":"app:2"})");
  auto third = await_event(session, [](const data_event& e) { return e.data.value("new", json()) == 3; });
  REQUIRE(third);
  CHECK(cursor_of(third->cursor).seq == cursor_of(second->cursor).seq + 1);
  running = sources_now(n.ep());
  REQUIRE(running.size() == 1);
  CHECK(running[0]["stream"] == stream);
  CHECK(running[0]["subscribers"] == 1);
  CHECK(running[0]["state"] == "running");
}

TEST_CASE("a reload that removes the files connector ends its sources with an error",
          "[sources][file][reload]") {
  temp_dir files;
  auto file = write_watched_file(files.path(), R"({"replicas":1})");
  auto root = file.parent_path();
  auto uri = "file://" + file.string();
  reloading_node n(files_config({root}));

  client::sse_stream session(n.ep(), uri_target(uri));
  await_hello(session);
  start_watch_ok(n.ep(), {{"name", "app"}, {"uri", uri}, {"debounce_ms", 50}});
  client::sse_stream notices(n.ep(), sse_target({"watch:app"}));
  await_hello(notices);
  REQUIRE(sources_now(n.ep()).size() == 1);

  auto reply = n.reload("log-level: info\n");
  CHECK(reply["restart_needed"] == json::array());
  CHECK(reply["upstreams"]["removed"] == json::array({"files"}));

  auto error = await_event(session, [](const data_event& e) { return e.type == "ERROR"; });
  REQUIRE(error);
  CHECK(error->data["message"] == "upstream files was removed by a reload");
  CHECK(error->data["source_failed"] == true);
  // The watch sends its last notice and is listed as failed.
  auto last = await_notices(notices, 1, 10s);
  CHECK(last.size() == 1);
  CHECK(sources_now(n.ep()).empty());
  auto again = start_watch(n.ep(), {{"name", "again"}, {"uri", uri}});
  CHECK(again.status == 400);
  // Listed as failed once the watch manager has seen its end (logged then).
  REQUIRE(n.node->await_log("\"watch.failed\"", 5s));
  bool failed = false;
  for (const auto& w : list_watches(n.ep()))
    if (w["name"] == "app") failed = w.value("state", "") == "failed";
  CHECK(failed);
}
