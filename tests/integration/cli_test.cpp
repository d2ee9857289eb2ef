// The `tidings` command-line client against a real node: what it prints,
// what it exits with, and that watch shows exactly the acknowledged events.

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "core/cursor.hpp"
#include "tests/integration/cli_invocation.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// What watch prints for an event: cursor, stream, path, type, compact data.
std::string watch_line(const std::string& cursor, const std::string& stream, const std::string& path,
                       const std::string& type, const std::string& compact_data) {
  return cursor + "\t" + stream + "\t" + path + "\t" + type + "\t" + compact_data;
}

}  // namespace

TEST_CASE("cli publish prints the cursor of an event given as an argument or on stdin", "[cli]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  auto arg = run_command(cli(ep, {"publish", "docs", R"({"path":"/a","data":{"x":1}})"}), std::nullopt,
                         command_timeout);
  INFO("publish with an argument: " << describe(arg));
  REQUIRE(arg.exit_code == 0);
  auto arg_lines = lines_of(arg.out);
  REQUIRE(arg_lines.size() == 1);
  CHECK(arg.out == arg_lines[0] + "\n");
  auto first = cursor_of(arg_lines[0]);
  CHECK(first.seq == 1);
  CHECK(first.epoch != 0);

  auto in = run_command(cli(ep, {"publish", "docs"}),
                        std::string(R"({"path":"/b","type":"ADDED","data":[1,"two"]})"), command_timeout);
  INFO("publish from stdin: " << describe(in));
  REQUIRE(in.exit_code == 0);
  auto in_lines = lines_of(in.out);
  REQUIRE(in_lines.size() == 1);
  auto second = cursor_of(in_lines[0]);
  CHECK(second.epoch == first.epoch);
  CHECK(second.seq == 2);

  // "-" names stdin explicitly; an array prints one cursor per line, in order.
  auto batch = run_command(cli(ep, {"publish", "docs", "-"}),
                           std::string(R"([{"path":"/c"},{"path":"/d","data":null}])"), command_timeout);
  INFO("array from stdin: " << describe(batch));
  REQUIRE(batch.exit_code == 0);
  auto batch_lines = lines_of(batch.out);
  REQUIRE(batch_lines.size() == 2);
  CHECK(cursor_of(batch_lines[0]).seq == 3);
  CHECK(cursor_of(batch_lines[1]).seq == 4);

  // What the CLI printed is what the node stored.
  auto history = read_history(ep, "docs");
  REQUIRE(history.size() == 4);
  CHECK(history[0]["cursor"] == arg_lines[0]);
  CHECK(history[0]["path"] == "/a");
  CHECK(history[0]["type"] == "CHANGED");
  CHECK(history[0]["data"] == json{{"x", 1}});
  CHECK(history[1]["cursor"] == in_lines[0]);
  CHECK(history[1]["path"] == "/b");
  CHECK(history[1]["type"] == "ADDED");
  CHECK(history[1]["data"] == json::array({1, "two"}));
  CHECK(history[2]["cursor"] == batch_lines[0]);
  CHECK(history[2]["path"] == "/c");
  CHECK(history[3]["cursor"] == batch_lines[1]);
  CHECK(history[3]["path"] == "/d");
}

TEST_CASE("cli publish of malformed JSON fails with the server's error message", "[cli]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  const std::string malformed = R"({"path":"/a","data":)";

  // The message the node gives for this body, asked directly.
  auto direct =
      client::request(ep, "POST", events_target("docs"), malformed, {{"Content-Type", "application/json"}});
  INFO("direct reply: " << direct.status << " " << direct.body);
  REQUIRE(direct.status == 400);
  auto direct_body = parse_body(direct);
  REQUIRE(direct_body["error"].is_string());
  const auto server_message = direct_body["error"].get<std::string>();
  REQUIRE_FALSE(server_message.empty());

  SECTION("as an argument") {
    auto r = run_command(cli(ep, {"publish", "docs", malformed}), std::nullopt, command_timeout);
    INFO(describe(r));
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code != 2);  // not a usage error: the server refused it
    CHECK(r.out.empty());
    CHECK(r.err.find(server_message) != std::string::npos);
  }
  SECTION("on stdin") {
    auto r = run_command(cli(ep, {"publish", "docs"}), malformed, command_timeout);
    INFO(describe(r));
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code != 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(server_message) != std::string::npos);
  }

  // Nothing was appended: the stream was never created.
  CHECK(client::request(ep, "GET", "/v1/streams/docs").status == 404);
}

TEST_CASE("cli usage errors exit 2 without touching the server", "[cli]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  SECTION("publish without a stream") {
    auto r = run_command(cli(ep, {"publish"}), std::nullopt, command_timeout);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("publish wants STREAM") != std::string::npos);
    CHECK(r.err.find("usage:") != std::string::npos);
  }
  SECTION("watch without a stream") {
    auto r = run_command(cli(ep, {"watch"}), std::nullopt, command_timeout);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("usage:") != std::string::npos);
  }
  SECTION("an unknown option") {
    auto r =
        run_command(cli(ep, {"publish", "docs", "{}", "--no-such-option"}), std::nullopt, command_timeout);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--no-such-option") != std::string::npos);
  }
  SECTION("--count zero") {
    auto r = run_command(cli(ep, {"watch", "docs", "--count", "0"}), std::nullopt, command_timeout);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--count") != std::string::npos);
  }
  CHECK(client::request(ep, "GET", "/v1/streams/docs").status == 404);
}

TEST_CASE("cli watch --count 3 prints the next three events as tab-separated lines and exits 0", "[cli]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  // The watcher resumes after this event, so it gets exactly the three
  // published below whether it connects before or after they are published.
  auto before = publish(ep, "docs", event_json("/before", "ADDED", "not shown"));

  child_process watcher(cli(ep, {"watch", "docs", "--since", before, "--count", "3"}));

  client::http_connection conn(ep);
  auto c1 = publish(conn, "docs", R"({"path":"/one.md","type":"MODIFIED","data":{"a":1,"b":"two words"}})");
  auto c2 = publish(conn, "docs", R"({"path":"/dir/two.md","type":"ADDED","data":[1,2,{"k":null}]})");
  auto c3 = publish(conn, "docs", R"({"path":"/three","data":"tab\there"})");

  const bool printed = watcher.await_stdout_lines(3, command_timeout);
  auto r = watcher.wait(command_timeout);
  INFO(describe(r));
  CHECK(printed);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == watch_line(c1, "docs", "/one.md", "MODIFIED", R"({"a":1,"b":"two words"})"));
  CHECK(lines[1] == watch_line(c2, "docs", "/dir/two.md", "ADDED", R"([1,2,{"k":null}])"));
  // A tab inside the data stays escaped in its JSON, so the line keeps five fields.
  CHECK(lines[2] == watch_line(c3, "docs", "/three", "CHANGED", R"("tab\there")"));
  CHECK(r.out.back() == '\n');
}

TEST_CASE("cli watch --since a cursor resumes after it", "[cli]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  std::vector<std::string> cursors;
  {
    client::http_connection conn(ep);
    for (int i = 1; i <= 5; ++i) {
      cursors.push_back(publish(conn, "docs", event_json("/e" + std::to_string(i), "ADDED", json{{"n", i}})));
    }
  }

  auto r = run_command(cli(ep, {"watch", "docs", "--since", cursors[1], "--count", "3"}), std::nullopt,
                       command_timeout);
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto n = i + 3;
    CHECK(lines[i] == watch_line(cursors[n - 1], "docs", "/e" + std::to_string(n), "ADDED",
                                 "{\"n\":" + std::to_string(n) + "}"));
  }
}
