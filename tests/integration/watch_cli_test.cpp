// The `tidings` watch commands against a real node: watch-start (with a Lua
// filter from a file or stdin), watch-list, watch-stop, and how `watch`
// prints the notices of a watch's stream watch:NAME.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/cursor.hpp"
#include "tests/integration/cli_invocation.hpp"
#include "tests/support/build_paths.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

constexpr auto notice_timeout = 20s;

const std::string watched_uri = "stream://memo/notes";

// The line split at runs of spaces.
std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

std::string write_file(const temp_dir& dir, const std::string& name, const std::string& text) {
  const auto path = (dir.path() / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The state snapshot event the watch diffs: {"shape":"state","state":{"owner":OWNER}}.
std::string owner_snapshot(const std::string& owner) {
  return event_json("/notes", "CHANGED", json{{"shape", "state"}, {"state", {{"owner", owner}}}});
}

// GET /v1/watches, asked directly.
json watches_of(const client::endpoint& ep) {
  auto res = client::request(ep, "GET", "/v1/watches");
  INFO("GET /v1/watches: " << res.status << " " << res.body);
  REQUIRE(res.status == 200);
  return parse_body(res);
}

// The next notice on the session (a data event of type NOTICE), failing the
// test when none comes in time.
data_event await_notice(client::sse_stream& session) {
  auto got = collect_data_events(session, 1, notice_timeout);
  INFO("collection ended: " << to_string(got.ended));
  REQUIRE(got.events.size() == 1);
  REQUIRE(got.events[0].type == "NOTICE");
  return got.events[0];
}

}  // namespace

TEST_CASE("cli watch-start with a filter file starts the watch and watch-list shows it", "[cli][watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish(ep, "memo", owner_snapshot("ann"));
  const auto filter =
      write_file(dir, "filter.lua", "return 'filtered ' .. event.type .. ' ' .. tostring(event.key)\n");

  auto start =
      run_command(cli(ep, {"watch-start", "cm", watched_uri, "--on-event", filter, "--debounce-ms", "0"}),
                  std::nullopt, command_timeout);
  INFO("watch-start: " << describe(start));
  REQUIRE(start.exit_code == 0);
  CHECK(start.out == "started cm on " + watched_uri + " (shape: state)\n");
  CHECK(start.err.empty());

  auto listed = watches_of(ep);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["name"] == "cm");
  CHECK(listed[0]["uri"] == watched_uri);
  CHECK(listed[0]["shape"] == "state");

  SECTION("the table") {
    auto r = run_command(cli(ep, {"watch-list"}), std::nullopt, command_timeout);
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    auto lines = lines_of(r.out);
    REQUIRE(lines.size() == 2);
    CHECK(words_of(lines[0]) ==
          std::vector<std::string>{"NAME", "URI", "SHAPE", "EVENTS", "NOTICES", "STATE"});
    const auto& w = listed[0];
    CHECK(words_of(lines[1]) == std::vector<std::string>{"cm", watched_uri, "state", w["events"].dump(),
                                                         w["notices"].dump(), w["state"].get<std::string>()});
    // Columns line up: each value starts where its heading does.
    CHECK(lines[1].find(watched_uri) == lines[0].find("URI"));
    CHECK(lines[1].find(w["state"].get<std::string>()) == lines[0].find("STATE"));
  }
  SECTION("--json") {
    auto r = run_command(cli(ep, {"watch-list", "--json"}), std::nullopt, command_timeout);
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    auto printed = json::parse(r.out);
    REQUIRE(printed.is_array());
    REQUIRE(printed.size() == 1);
    CHECK(printed[0]["name"] == "cm");
    CHECK(printed[0]["uri"] == watched_uri);
    CHECK(printed[0]["shape"] == "state");
    CHECK(printed[0].contains("restore_failed"));
  }
  SECTION("the filter from the file makes the notice lines") {
    client::sse_stream session(ep, sse_target({"watch:cm"}));
    await_hello(session);
    publish(ep, "memo", owner_snapshot("bob"));
    auto notice = await_notice(session);
    CHECK(notice.data["watch"] == "cm");
    CHECK(notice.data["lines"] == json::array({"filtered MODIFIED owner"}));
  }
  SECTION("starting it again with the filter on stdin replaces it") {
    auto r =
        run_command(cli(ep, {"watch-start", "cm", watched_uri, "--on-event", "-", "--max-wait-ms", "50"}),
                    std::string("return 'from stdin'"), command_timeout);
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "replaced cm on " + watched_uri + " (shape: state)\n");
    CHECK(watches_of(ep).size() == 1);
  }
}

TEST_CASE("cli watch-start of a filter with a Lua syntax error exits 1 with the Lua message",
          "[cli][watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  const std::string source = "return (\n";

  // The message the node gives for this filter, asked directly.
  auto direct = client::request(ep, "POST", "/v1/watches",
                                json{{"name", "broken"}, {"uri", watched_uri}, {"on_event", source}}.dump(),
                                {{"Content-Type", "application/json"}});
  INFO("direct reply: " << direct.status << " " << direct.body);
  REQUIRE(direct.status == 400);
  const auto server_message = parse_body(direct)["error"].get<std::string>();
  CHECK(server_message.find("on_event:") != std::string::npos);

  const auto filter = write_file(dir, "broken.lua", source);
  auto r = run_command(cli(ep, {"watch-start", "broken", watched_uri, "--on-event", filter}), std::nullopt,
                       command_timeout);
  INFO(describe(r));
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "tidings: " + server_message + "\n");

  auto list = run_command(cli(ep, {"watch-list"}), std::nullopt, command_timeout);
  INFO(describe(list));
  CHECK(list.exit_code == 0);
  CHECK(list.out == "no watches\n");
}

TEST_CASE("cli watch-stop stops a watch, and a second stop finds none", "[cli][watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  auto start = run_command(cli(ep, {"watch-start", "cm", watched_uri}), std::nullopt, command_timeout);
  INFO("watch-start: " << describe(start));
  REQUIRE(start.exit_code == 0);
  CHECK(start.out.starts_with("started cm on " + watched_uri + " (shape: "));

  auto first = run_command(cli(ep, {"watch-stop", "cm"}), std::nullopt, command_timeout);
  INFO("first stop: " << describe(first));
  CHECK(first.exit_code == 0);
  CHECK(first.out == "stopped cm\n");
  CHECK(first.err.empty());
  CHECK(watches_of(ep).empty());

  auto second = run_command(cli(ep, {"watch-stop", "cm"}), std::nullopt, command_timeout);
  INFO("second stop: " << describe(second));
  CHECK(second.exit_code == 1);
  CHECK(second.out.empty());
  CHECK(second.err == "tidings: no watch named cm\n");
}

TEST_CASE("cli watch watch:NAME prints a notice as its lines", "[cli][watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  // The baseline the watch starts from.
  publish(ep, "memo", owner_snapshot("ann"));

  auto start = run_command(cli(ep, {"watch-start", "cm", watched_uri, "--debounce-ms", "0"}), std::nullopt,
                           command_timeout);
  INFO("watch-start: " << describe(start));
  REQUIRE(start.exit_code == 0);

  // A session of our own is subscribed (hello) before the change, so the
  // notice is certain to be seen; the CLI then reads it back from just before
  // it, which does not depend on when the CLI connects.
  client::sse_stream session(ep, sse_target({"watch:cm"}));
  await_hello(session);
  publish(ep, "memo", owner_snapshot("bob"));
  auto notice = await_notice(session);
  INFO("notice: " << notice.raw.dump());
  REQUIRE(notice.data["lines"].is_array());
  REQUIRE_FALSE(notice.data["lines"].empty());
  auto at = cursor_of(notice.cursor);
  REQUIRE(at.seq >= 1);
  const auto before = core::format_cursor({at.epoch, at.seq - 1});

  auto r = run_command(cli(ep, {"watch", "watch:cm", "--since", before, "--count", "1"}), std::nullopt,
                       command_timeout);
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  auto lines = lines_of(r.out);
  REQUIRE_FALSE(lines.empty());
  // cursor<TAB>stream<TAB>first line, then each further line indented two spaces.
  CHECK(lines[0].starts_with(notice.cursor + "\twatch:cm\t"));
  CHECK(lines[0].find("MODIFIED owner (ann\xe2\x86\x92"
                      "bob)") != std::string::npos);
  std::string expected = notice.cursor + "\twatch:cm\t";
  for (std::size_t i = 0; i < notice.data["lines"].size(); ++i) {
    if (i) expected += "\n  ";
    expected += notice.data["lines"][i].get<std::string>();
  }
  CHECK(r.out == expected + "\n");
}

TEST_CASE("cli watch command usage errors exit 2 without touching the server", "[cli][watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();

  auto expect_usage_error = [&](std::vector<std::string> args, const std::string& message) {
    auto r = run_command(cli(ep, std::move(args)), std::nullopt, command_timeout);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(message) != std::string::npos);
    return r;
  };

  SECTION("watch-start without NAME and URI") {
    auto r = expect_usage_error({"watch-start"}, "watch-start wants NAME URI");
    CHECK(r.err.find("usage:") != std::string::npos);
  }
  SECTION("watch-start without URI") {
    expect_usage_error({"watch-start", "cm"}, "watch-start wants NAME URI");
  }
  SECTION("watch-stop without NAME") {
    expect_usage_error({"watch-stop"}, "watch-stop wants NAME");
  }
  SECTION("watch-list with an argument") {
    expect_usage_error({"watch-list", "cm"}, "watch-list takes no arguments");
  }
  SECTION("an unknown option") {
    expect_usage_error({"watch-list", "--no-such-option"}, "--no-such-option");
  }
  SECTION("an option of another command") {
    expect_usage_error({"watch-stop", "cm", "--json"}, "--json belongs to watch-list");
  }
  SECTION("--debounce-ms not a number") {
    expect_usage_error({"watch-start", "cm", watched_uri, "--debounce-ms", "soon"}, "--debounce-ms");
  }
  SECTION("--max-wait-ms negative") {
    expect_usage_error({"watch-start", "cm", watched_uri, "--max-wait-ms=-5"}, "--max-wait-ms");
  }
  SECTION("a filter file that does not exist") {
    const auto missing = (dir.path() / "no-such-filter.lua").string();
    expect_usage_error({"watch-start", "cm", watched_uri, "--on-event", missing}, missing);
  }
  CHECK(watches_of(ep).empty());
}

TEST_CASE("cli --help describes the watch commands", "[cli][watch]") {
  auto r = run_command({tidings_cli_path(), "--help"}, std::nullopt, command_timeout);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("watch-start NAME URI [--on-event FILE] [--debounce-ms MS]") != std::string::npos);
  CHECK(r.out.find("[--max-wait-ms MS]") != std::string::npos);
  CHECK(r.out.find("watch-list [--json]") != std::string::npos);
  CHECK(r.out.find("watch-stop NAME") != std::string::npos);
}
