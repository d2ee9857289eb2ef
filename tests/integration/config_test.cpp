// tidingsd's configuration: a YAML file with the flags' keys, flags winning
// over it, and start-up refusals (non-loopback listen, bad flags) that end
// the process with a message instead of a node.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/build_paths.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// A start that must fail does so at once; this only bounds a node that
// wrongly starts (it is killed then).
constexpr auto refusal_timeout = 10s;

std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
  return path;
}

std::vector<std::string> five_publishes(const client::endpoint& ep, const std::string& stream) {
  std::vector<std::string> cursors;
  client::http_connection conn(ep);
  for (int i = 1; i <= 5; ++i) cursors.push_back(publish(conn, stream, event_json("/e", "ADDED", i)));
  return cursors;
}

json stream_info(const client::endpoint& ep, const std::string& stream) {
  auto r = client::request(ep, "GET", "/v1/streams/" + stream);
  INFO("GET /v1/streams/" << stream << ": " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  return parse_body(r);
}

// `tidingsd --data-dir DIR args...`, run to its end. The data directory keeps
// a node that wrongly starts from writing into the working directory.
command_result run_tidingsd(const std::filesystem::path& data_dir, std::vector<std::string> args) {
  std::vector<std::string> argv{tidingsd_binary(), "--data-dir", data_dir.string()};
  for (auto& a : args) argv.push_back(std::move(a));
  return run_command(std::move(argv), std::nullopt, refusal_timeout);
}

const std::string config_yaml =
    "# written by config_test\n"
    "heartbeat-ms: 150\n"
    "retention-events: 3\n";

}  // namespace

TEST_CASE("a YAML config file sets heartbeat and retention", "[config]") {
  temp_dir conf;
  temp_dir data;
  auto file = write_file(conf.path() / "tidings.yaml", config_yaml);
  tidingsd_process node(data.path(), {"--config", file.string()});
  auto ep = node.endpoint();

  client::sse_stream session(ep, sse_target({"docs"}));
  auto hello = await_hello(session);
  INFO("hello: " << hello.dump());
  CHECK(hello["heartbeat_ms"] == 150);

  // The interval is really used, not only announced: an idle session gets a
  // heartbeat long before the default 20 s.
  core::sse_message m;
  REQUIRE(session.next(m, 2s) == client::sse_stream::result::message);
  CHECK(m.event == "heartbeat");

  auto cursors = five_publishes(ep, "docs");
  auto info = stream_info(ep, "docs");
  INFO("stream: " << info.dump());
  CHECK(info["events"] == 3);
  CHECK(info["first"] == cursors[2]);
  CHECK(info["head"] == cursors[4]);
  CHECK(info["retention"]["events"] == 3);
}

TEST_CASE("a flag wins over the config file wherever it stands", "[config]") {
  temp_dir conf;
  temp_dir data;
  auto file = write_file(conf.path() / "tidings.yaml", config_yaml);
  // The flag comes before --config: the file is still applied first.
  tidingsd_process node(data.path(), {"--heartbeat-ms", "400", "--config", file.string()});
  auto ep = node.endpoint();

  client::sse_stream session(ep, sse_target({"docs"}));
  auto hello = await_hello(session);
  INFO("hello: " << hello.dump());
  CHECK(hello["heartbeat_ms"] == 400);

  // What the flag did not override still comes from the file.
  auto cursors = five_publishes(ep, "docs");
  auto info = stream_info(ep, "docs");
  INFO("stream: " << info.dump());
  CHECK(info["events"] == 3);
  CHECK(info["first"] == cursors[2]);
}

TEST_CASE("a retention flag wins over the file setting", "[config]") {
  temp_dir conf;
  temp_dir data;
  auto file = write_file(conf.path() / "tidings.yaml", config_yaml);
  tidingsd_process node(data.path(), {"--config", file.string(), "--retention-events", "4"});
  auto ep = node.endpoint();

  auto cursors = five_publishes(ep, "docs");
  auto info = stream_info(ep, "docs");
  INFO("stream: " << info.dump());
  CHECK(info["events"] == 4);
  CHECK(info["first"] == cursors[1]);
  CHECK(info["retention"]["events"] == 4);
}

TEST_CASE("tidingsd refuses a non-loopback listen address until auth exists", "[config]") {
  temp_dir data;
  auto r = run_tidingsd(data.path(), {"--listen", "0.0.0.0:0"});
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("0.0.0.0") != std::string::npos);
  CHECK(r.err.find("loopback") != std::string::npos);
  CHECK(r.err.find("auth") != std::string::npos);
  CHECK(r.err.find("node.listening") == std::string::npos);
}

TEST_CASE("tidingsd refuses a non-loopback listen address from the config file too", "[config]") {
  temp_dir conf;
  temp_dir data;
  auto file = write_file(conf.path() / "tidings.yaml", "listen: 0.0.0.0:0\n");
  auto r = run_tidingsd(data.path(), {"--config", file.string()});
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("loopback") != std::string::npos);
  CHECK(r.err.find("auth") != std::string::npos);
}

TEST_CASE("tidingsd exits 2 naming an unknown flag", "[config]") {
  temp_dir data;
  SECTION("with a value") {
    auto r = run_tidingsd(data.path(), {"--no-such-flag", "1"});
    INFO(describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("no-such-flag") != std::string::npos);
    CHECK(r.err.find("unknown") != std::string::npos);
    CHECK(r.err.find("usage:") != std::string::npos);
  }
  SECTION("as the last argument") {
    auto r = run_tidingsd(data.path(), {"--no-such-flag"});
    INFO(describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("no-such-flag") != std::string::npos);
    CHECK(r.err.find("unknown") != std::string::npos);
  }
  SECTION("followed by another flag") {
    auto r = run_tidingsd(data.path(), {"--no-such-flag", "--listen", "127.0.0.1:0"});
    INFO(describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("no-such-flag") != std::string::npos);
    CHECK(r.err.find("unknown") != std::string::npos);
  }
}

TEST_CASE("tidingsd exits 2 on an unknown key in the config file", "[config]") {
  temp_dir conf;
  temp_dir data;
  auto file = write_file(conf.path() / "tidings.yaml", "heartbeat-ms: 150\nno-such-key: 1\n");
  auto r = run_tidingsd(data.path(), {"--config", file.string()});
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no-such-key") != std::string::npos);
  CHECK(r.err.find("unknown") != std::string::npos);
}

TEST_CASE("tidingsd exits 2 on --durability maybe", "[config]") {
  temp_dir data;
  auto r = run_tidingsd(data.path(), {"--durability", "maybe"});
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--durability") != std::string::npos);
  CHECK(r.err.find("sync") != std::string::npos);
}

TEST_CASE("the repo's example config starts a node as is", "[config]") {
  temp_dir data;
  auto example = std::filesystem::path(source_dir()) / "config/tidings.example.yaml";
  // The harness adds --listen 127.0.0.1:0 and --data-dir: flags win over the file.
  tidingsd_process node(data.path(), {"--config", example.string()});
  auto r = client::request(node.endpoint(), "GET", "/healthz");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(std::filesystem::exists(data.path() / "CURRENT"));
}

TEST_CASE("a reload applies a changed log-level live", "[config][logging]") {
  temp_dir conf;
  temp_dir data;
  auto file = write_file(conf.path() / "tidings.yaml", "log-level: info\nheartbeat-ms: 20000\n");
  tidingsd_process node(data.path(), {"--config", file.string()});
  auto ep = node.endpoint();

  // watch.started is a debug line, logged before the watch's reply.
  start_watch_ok(ep, {{"name", "before"}, {"uri", "stream://memo/before"}});
  CHECK(node.log().find("\"watch.started\"") == std::string::npos);

  write_file(file, "log-level: info,watch=debug\nheartbeat-ms: 20000\n");
  auto r = client::request(ep, "POST", "/admin/v1/reload", "{}", {{"Content-Type", "application/json"}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  auto body = json::parse(r.body);
  CHECK(body["restart_needed"] == json::array());
  CHECK(body["log_level"] == "info,watch=debug");

  start_watch_ok(ep, {{"name", "after"}, {"uri", "stream://memo/after"}});
  CHECK(node.await_log("\"watch.started\",\"watch\":\"after\"", 5s));
}
