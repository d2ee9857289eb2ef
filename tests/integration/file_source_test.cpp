// The file source through the real tidingsd (issue 4): inotify on a file
// under a configured root, atomic replace by rename, fail fast on a missing
// path or one outside the roots, and changes made while the node was down
// reported once after a restart (the source's stored snapshot).

#include <catch2/catch.hpp>

#include <fstream>
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

}  // namespace

TEST_CASE("a watch on a file hears of each replace, and of changes made while the node was down",
          "[sources][file]") {
  temp_dir dir;
  auto file = write_watched_file(dir.path(), R"({"replicas":1,"image":"app:1"})");
  auto root = file.parent_path();
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n  files:\n    roots: [" << root.string() << "]\n";
  auto data = dir.path() / "data";
  std::vector<std::string> args{"--config", cfg.string()};
  auto uri = "file://" + file.string();
  std::string last_notice;
  {
    tidingsd_process node(data, args);
    auto ep = node.endpoint();

    auto missing = start_watch(ep, {{"name", "gone"}, {"uri", "file://" + (root / "nope.json").string()}});
    CHECK(missing.status == 502);
    CHECK(json::parse(missing.body)["error"].get<std::string>().find("No such file") != std::string::npos);
    auto outside = start_watch(ep, {{"name", "outside"}, {"uri", "file:///etc/passwd"}});
    CHECK(outside.status >= 400);
    CHECK(outside.status < 600);

    auto started = start_watch_ok(ep, {{"name", "app"}, {"uri", uri}, {"debounce_ms", 50}});
    CHECK(started["shape"] == "state");
    client::sse_stream notices(ep, sse_target({"watch:app"}));
    await_hello(notices);

    replace_file(file, R"({"replicas":3,"image":"app:1"})");
    auto first = await_notices(notices, 1, 10s);
    REQUIRE(first.size() == 1);
    CHECK(notice_lines(first[0]) == std::vector<std::string>{"MODIFIED replicas (1→3)"});
    last_notice = first[0].cursor;
    CHECK(node.terminate() == 0);
  }
  replace_file(file, R"({"replicas":3,"image":"app:2"})");
  {
    tidingsd_process node(data, args);
    auto ep = node.endpoint();
    client::sse_stream notices(ep, sse_target({"watch:app"}, last_notice));
    await_hello(notices);
    auto missed = await_notices(notices, 1, 10s);
    REQUIRE(missed.size() == 1);
    CHECK(notice_lines(missed[0]) == std::vector<std::string>{"MODIFIED image (app:1→app:2)"});
  }
}
