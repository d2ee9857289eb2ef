// `tidingsd --check-config FILE` against the real binary: every kind of bad
// config ends it with exit code 2 and a message on stderr naming the field
// path and what is wrong; a good file (the repo's example included) prints
// `config FILE: ok (...)` and exits 0 without opening the store or a socket.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/build_paths.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings::testing;

std::filesystem::path example_config() {
  return std::filesystem::path(source_dir()) / "config/tidings.example.yaml";
}

constexpr const char* secret = "0123456789abcdef0123456789abcdef-check";

// A config directory with a data directory next to it that a check must not
// create (the store is never opened).
struct check_dir {
  temp_dir dir;
  std::filesystem::path file = dir.path() / "tidings.yaml";
  std::filesystem::path data = dir.path() / "data";

  command_result check(const std::string& yaml, std::vector<std::string> flags = {}) {
    std::ofstream(file) << yaml;
    std::vector<std::string> argv{tidingsd_binary(), "--check-config", file.string(), "--data-dir",
                                  data.string()};
    for (auto& f : flags) argv.push_back(std::move(f));
    return run_command(std::move(argv), std::nullopt, 20s);
  }
};

std::string tenant(const std::string& key_lines, const std::string& extra = {}) {
  return "tenants:\n"
         "  - id: acme\n"
         "    keys:\n" +
         key_lines + extra;
}

std::string hs256_key() {
  return "      - {kid: k1, alg: HS256, secret: \"" + std::string(secret) + "\"}\n";
}

// Runs the check and asserts the refusal: exit 2, `path` named in stderr
// with `what`, nothing on stdout, no data directory.
void require_refused(const std::string& yaml, const std::string& path, const std::string& what,
                     std::vector<std::string> flags = {}) {
  check_dir d;
  auto r = d.check(yaml, std::move(flags));
  INFO("config:\n" << yaml << "\n" << describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
  CHECK(r.out.find(": ok") == std::string::npos);
  CHECK(r.err.find(path) != std::string::npos);
  CHECK(r.err.find(what) != std::string::npos);
  CHECK(r.err.find(secret) == std::string::npos);  // a message never quotes a secret
  CHECK_FALSE(std::filesystem::exists(d.data));
}

}  // namespace

TEST_CASE("tidingsd --check-config accepts a good file, prints a summary, starts nothing",
          "[config][check]") {
  check_dir d;
  auto r = d.check("heartbeat-ms: 500\nlog-level: info,source=debug\n" + tenant(hs256_key()));
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "config " + d.file.string() +
                     ": ok (1 tenant, 0 upstreams, listen 127.0.0.1:8080, data-dir " + d.data.string() +
                     ", log-level info,source=debug)\n");
  CHECK(r.err.empty());
  CHECK_FALSE(std::filesystem::exists(d.data));
}

TEST_CASE("tidingsd --check-config passes the repo's example config", "[config][check]") {
  auto r = run_command({tidingsd_binary(), "--check-config", example_config().string()}, std::nullopt, 20s);
  INFO(describe(r));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.starts_with("config " + example_config().string() + ": ok (0 tenants, 0 upstreams, "));
}

TEST_CASE("tidingsd --check-config applies the flags given with it", "[config][check]") {
  require_refused("heartbeat-ms: 500\n", "--heartbeat-ms", "must be a whole number", {"--heartbeat-ms", "5"});
  require_refused("heartbeat-ms: 500\n", "0.0.0.0", "loopback", {"--listen", "0.0.0.0:8080"});
  check_dir d;
  auto r = d.check("heartbeat-ms: 500\n", {"--log-level", "warn"});
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("log-level warn)") != std::string::npos);
}

TEST_CASE("tidingsd --check-config rejects YAML that is not a settings mapping", "[config][check]") {
  SECTION("a syntax error names its line") {
    require_refused("heartbeat-ms: 500\nlisten: [127.0.0.1:8080\n", "not valid YAML", "line");
  }
  SECTION("a list at the top") {
    require_refused("- listen\n- data-dir\n", "config file", "expected a mapping of settings");
  }
  SECTION("a file that does not exist") {
    check_dir d;
    auto r = run_command({tidingsd_binary(), "--check-config", (d.dir.path() / "missing.yaml").string()},
                         std::nullopt, 20s);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("cannot read config file") != std::string::npos);
    CHECK(r.err.find("missing.yaml") != std::string::npos);
  }
}

TEST_CASE("tidingsd --check-config rejects unknown keys at every level", "[config][check]") {
  SECTION("top level") {
    require_refused("heartbeat-ms: 500\ncolour: blue\n", ": colour: ", "unknown setting");
  }
  SECTION("a tenant") {
    require_refused(tenant(hs256_key(), "    colour: blue\n"), "tenants[0].colour: ", "unknown setting");
  }
  SECTION("a tenant's key") {
    require_refused(tenant("      - {alg: HS256, secret: \"" + std::string(secret) + "\", colour: blue}\n"),
                    "tenants[0].keys[0].colour: ", "unknown setting");
  }
  SECTION("a tenant's limits") {
    require_refused(tenant(hs256_key(), "    limits: {watches: 3, burst: 5}\n"),
                    "tenants[0].limits.burst: ", "unknown setting");
  }
  SECTION("a tenant's notification scope") {
    require_refused(
        tenant(hs256_key(), "    notification_scopes: [{stream: a, scope: subject, field: /o, x: 1}]\n"),
        "tenants[0].notification_scopes[0].x: ", "unknown setting");
  }
  SECTION("the upstreams section") {
    require_refused("upstreams:\n  colour: blue\n", "upstreams.colour: ", "unknown setting");
  }
  SECTION("an MCP server") {
    require_refused("upstreams:\n  mcp:\n    mem: {command: [node], colour: blue}\n",
                    "upstreams.mcp.mem.colour: ", "unknown setting");
  }
  SECTION("a webhook resource's strategy") {
    require_refused(
        "upstreams:\n  resources:\n    - uri: hook://a\n      watch: {strategy: {type: webhook, colour: "
        "blue}}\n",
        "upstreams.resources[0].watch.strategy.colour: ", "unknown setting");
  }
  SECTION("files, kube and postgres") {
    require_refused("upstreams:\n  files: {roots: [/srv], depth: 1}\n",
                    "upstreams.files.depth: ", "unknown setting");
    require_refused("upstreams:\n  kube:\n    prod: {server: http://127.0.0.1:1, ns: x}\n",
                    "upstreams.kube.prod.ns: ", "unknown setting");
    require_refused("upstreams:\n  postgres:\n    app: {conninfo: x, pool: 2}\n",
                    "upstreams.postgres.app.pool: ", "unknown setting");
  }
}

TEST_CASE("tidingsd --check-config rejects bad values, naming the setting", "[config][check]") {
  SECTION("a negative count") {
    require_refused("retention-events: -5\n", ": retention-events: ", "must be a whole number from 0");
  }
  SECTION("an unknown durability") {
    require_refused("durability: maybe\n", ": durability: ", "must be sync, batch or none");
  }
  SECTION("a bad log level") {
    require_refused("log-level: loud\n", ": log-level: ", "\"loud\" is not a level");
    require_refused("log-level: info,sorce=debug\n", ": log-level: ", "unknown subsystem \"sorce\"");
  }
  SECTION("a list where one value belongs") {
    require_refused("heartbeat-ms: [1, 2]\n", ": heartbeat-ms: ", "must be a single value");
  }
  SECTION("non-loopback listen without tenants") {
    require_refused("listen: 0.0.0.0:8080\n", "listen: refusing to listen on 0.0.0.0", "configure tenants");
  }
  SECTION("resource templates") {
    const std::string head = "upstreams:\n  resources:\n    - ";
    require_refused(head +
                        "uri_template: \"drive://file/{id}\"\n"
                        "      backend: {url: \"http://127.0.0.1:9/files/{idd}\"}\n"
                        "      watch: {strategy: {type: poll}}\n",
                    "upstreams.resources: resource template drive://file/{id}: ",
                    "backend.url names {idd}, which is not a variable of the template");
    require_refused(head + "uri_template: drive://file\n      watch: {strategy: {type: webhook}}\n",
                    "upstreams.resources: resource template drive://file ",
                    "has no {variable}: write it as uri:");
    require_refused(head + "{uri: a://b, uri_template: \"a://{b}\", watch: {strategy: {type: webhook}}}\n",
                    "upstreams.resources[0]: ", "has uri and uri_template");
  }
}

TEST_CASE("tidingsd --check-config rejects bad tenant keys and scopes", "[config][check]") {
  SECTION("an unknown alg") {
    require_refused(tenant("      - {alg: HS999, secret: \"" + std::string(secret) + "\"}\n"),
                    "tenants[0].keys[0]: ", "unknown alg \"HS999\"");
  }
  SECTION("the second tenant's alg") {
    require_refused(tenant(hs256_key()) + "  - id: globex\n    keys:\n      - {alg: HS999}\n",
                    "tenants[1].keys[0]: ", "unknown alg \"HS999\"");
  }
  SECTION("a short HS256 secret") {
    require_refused(tenant("      - {alg: HS256, secret: too-short}\n"),
                    "tenants[0].keys[0].secret: ", "shorter than 32 bytes");
  }
  SECTION("a missing PEM file") {
    require_refused(tenant("      - {alg: RS256, public_key_file: /nonexistent/tidings-test.pem}\n"),
                    "tenants[0].keys[0].public_key_file: ", "cannot open /nonexistent/tidings-test.pem");
  }
  SECTION("a scope expression that is not Lua") {
    require_refused(
        tenant(hs256_key(),
               "    notification_scopes:\n      - {stream: inbox, scope: expression, expression: 'has(('}\n"),
        "tenants[0].notification_scopes[0].expression: ", "");
  }
}

TEST_CASE("tidingsd --check-config rejects an unset ${env.NAME}, naming the setting and the variable",
          "[config][check]") {
  ::unsetenv("TIDINGS_CHECK_UNSET");
  SECTION("in a top-level setting") {
    require_refused("data-dir: ${env.TIDINGS_CHECK_UNSET}/data\n",
                    ": data-dir: ", "environment variable TIDINGS_CHECK_UNSET is not set");
  }
  SECTION("in a tenant's secret") {
    require_refused(tenant("      - {alg: HS256, secret: \"${env.TIDINGS_CHECK_UNSET}\"}\n"),
                    "tenants[0].keys[0].secret: ", "environment variable TIDINGS_CHECK_UNSET is not set");
  }
  SECTION("in a webhook token") {
    require_refused(
        "upstreams:\n  resources:\n    - uri: hook://a\n"
        "      watch: {strategy: {type: webhook, token: \"${env.TIDINGS_CHECK_UNSET}\"}}\n",
        "upstreams.resources[0].watch.strategy.token: ",
        "environment variable TIDINGS_CHECK_UNSET is not set");
  }
}
