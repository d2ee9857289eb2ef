// The `tidings` CLI against a node with tenants (docs/security.md): --token,
// else $TIDINGS_TOKEN, goes out as "Authorization: Bearer" on every request
// and on the SSE connection; a 401 or 403 prints the node's own message and
// exits 1; an empty --token is a usage error (2). No message ever shows the token.

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/integration/cli_invocation.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/jwt_mint.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"

namespace {

using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// `tidings --server HOST:PORT args...` started through env(1), so that
// $TIDINGS_TOKEN is exactly `env_token` (unset for nullopt) whatever the test
// runner's own environment holds.
std::vector<std::string> cli_env(const client::endpoint& ep, const std::optional<std::string>& env_token,
                                 std::vector<std::string> args) {
  std::vector<std::string> argv{"/usr/bin/env", "-u", "TIDINGS_TOKEN"};
  if (env_token) argv.push_back("TIDINGS_TOKEN=" + *env_token);
  for (auto& a : cli(ep, std::move(args))) argv.push_back(std::move(a));
  return argv;
}

command_result run(const client::endpoint& ep, const std::optional<std::string>& env_token,
                   std::vector<std::string> args) {
  return run_command(cli_env(ep, env_token, std::move(args)), std::nullopt, command_timeout);
}

// The node's "error" message for `method target` with these headers, asked
// directly, so the tests compare the CLI with what the node really says.
std::string node_message(const client::endpoint& ep, const std::string& method, const std::string& target,
                         const std::string& body, client::header_list headers, int expected_status) {
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  auto r = client::request(ep, method, target, body, headers);
  INFO("direct " << method << " " << target << ": " << r.status << " " << r.body);
  REQUIRE(r.status == expected_status);
  auto j = parse_body(r);
  REQUIRE(j["error"].is_string());
  auto message = j["error"].get<std::string>();
  REQUIRE_FALSE(message.empty());
  return message;
}

// The paths of the stream's events, read with `token`.
std::vector<std::string> paths_in(const client::endpoint& ep, const std::string& token,
                                  const std::string& stream) {
  auto r = client::request(ep, "GET", events_target(stream) + "?limit=100", {}, bearer(token));
  INFO("history: " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  const auto body = parse_body(r);
  std::vector<std::string> out;
  for (const auto& e : body["events"]) out.push_back(e["path"].get<std::string>());
  return out;
}

// Whether the stream exists, asked with `token` (a refused publish creates none).
bool stream_exists(const client::endpoint& ep, const std::string& token, const std::string& stream) {
  auto r = client::request(ep, "GET", "/v1/streams/" + stream, {}, bearer(token));
  INFO("stream: " << r.status << " " << r.body);
  REQUIRE((r.status == 200 || r.status == 404));
  return r.status == 200;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("cli publish sends --token, else $TIDINGS_TOKEN, as a bearer token", "[cli][security]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto token = node.token(token_spec().sub("ann"));

  auto flag = run(ep, std::nullopt, {"--token", token, "publish", "docs", R"({"path":"/flag","data":1})"});
  INFO("--token: " << describe(flag));
  REQUIRE(flag.exit_code == 0);
  CHECK(flag.err.empty());
  auto flag_lines = lines_of(flag.out);
  REQUIRE(flag_lines.size() == 1);
  CHECK(cursor_of(flag_lines[0]).seq == 1);

  auto env = run(ep, token, {"publish", "docs", R"({"path":"/env"})"});
  INFO("TIDINGS_TOKEN: " << describe(env));
  REQUIRE(env.exit_code == 0);
  CHECK(env.err.empty());
  auto env_lines = lines_of(env.out);
  REQUIRE(env_lines.size() == 1);
  CHECK(cursor_of(env_lines[0]).seq == 2);

  // The flag wins over a stale variable, in either spelling and position.
  auto both =
      run(ep, std::string("stale.not.valid"), {"publish", "docs", R"({"path":"/both"})", "--token=" + token});
  INFO("--token= over TIDINGS_TOKEN: " << describe(both));
  REQUIRE(both.exit_code == 0);
  CHECK(cursor_of(lines_of(both.out).at(0)).seq == 3);

  CHECK(paths_in(ep, token, "docs") == std::vector<std::string>{"/flag", "/env", "/both"});
}

TEST_CASE("cli publish without a token, or with a refused one, prints the node's 401 message",
          "[cli][security]") {
  tenant_node node;
  auto ep = node.endpoint();
  const std::string event = R"({"path":"/a"})";

  SECTION("no token") {
    const auto message = node_message(ep, "POST", events_target("docs"), event, {}, 401);
    CHECK(contains(message, "missing token"));
    auto r = run(ep, std::nullopt, {"publish", "docs", event});
    INFO(describe(r));
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);  // the node refused: not a usage error
    CHECK(r.out.empty());
    CHECK(contains(r.err, "tidings: 401: " + message + "\n"));
    CHECK(contains(r.err, "--token TOKEN or set TIDINGS_TOKEN"));
  }
  SECTION("a token signed with another key, from the variable") {
    // Signed by a secret the node does not have; the CLI must not echo it.
    const auto forged = mint(broker::key_alg::hs256, "not-the-acme-secret-0123456789abcdef-01234",
                             token_spec().payload(), "k1");
    const auto message = node_message(ep, "POST", events_target("docs"), event, bearer(forged), 401);
    auto r = run(ep, forged, {"publish", "docs", event});
    INFO(describe(r));
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "tidings: 401: " + message + "\n"));
    CHECK(contains(r.err, "refused the token from TIDINGS_TOKEN"));
    CHECK_FALSE(contains(r.err, forged));
  }
  // Nothing was stored.
  CHECK_FALSE(stream_exists(ep, node.token(token_spec()), "docs"));
}

TEST_CASE("cli publish with a token lacking a write grant prints the node's 403 message", "[cli][security]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto reader = node.token(token_spec().sub("rita").write({}));
  const std::string event = R"({"path":"/a"})";
  const auto message = node_message(ep, "POST", events_target("docs"), event, bearer(reader), 403);
  CHECK(contains(message, "write grant"));

  auto r = run(ep, std::nullopt, {"--token", reader, "publish", "docs", event});
  INFO(describe(r));
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "tidings: 403: " + message + "\n");
  CHECK_FALSE(stream_exists(ep, reader, "docs"));
}

TEST_CASE("cli watch sends the token on its SSE connection and prints what another client publishes",
          "[cli][security]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto token = node.token(token_spec().sub("ann"));
  const auto writer = node.token(token_spec().sub("wes"));

  // The watcher resumes after this event, so it gets the next one whether it
  // connects before or after it is published.
  const auto before = publish(ep, "docs", event_json("/before", "ADDED", 0), bearer(writer));

  SECTION("--token") {
    child_process watcher(
        cli_env(ep, std::nullopt, {"--token", token, "watch", "docs", "--since", before, "--count", "1"}));
    const auto cursor = publish(ep, "docs", event_json("/next", "ADDED", json{{"n", 1}}), bearer(writer));
    const bool printed = watcher.await_stdout_lines(1, command_timeout);
    auto r = watcher.wait(command_timeout);
    INFO(describe(r));
    CHECK(printed);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out == cursor + "\tdocs\t/next\tADDED\t{\"n\":1}\n");
  }
  SECTION("TIDINGS_TOKEN") {
    child_process watcher(cli_env(ep, token, {"watch", "docs", "--since", before, "--count", "1"}));
    const auto cursor = publish(ep, "docs", event_json("/env", "ADDED", 2), bearer(writer));
    const bool printed = watcher.await_stdout_lines(1, command_timeout);
    auto r = watcher.wait(command_timeout);
    INFO(describe(r));
    CHECK(printed);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out == cursor + "\tdocs\t/env\tADDED\t2\n");
  }
  SECTION("no token: the node's 401, at once, even without --once") {
    const auto message = node_message(ep, "GET", "/v1/sse?stream=docs", {}, {}, 401);
    auto r = run(ep, std::nullopt, {"watch", "docs", "--count", "1"});
    INFO(describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "tidings: 401: " + message + "\n"));
  }
  SECTION("a token without a read grant: the node's 403") {
    const auto stranger = node.token(token_spec().sub("sam").read({"other"}));
    const auto message = node_message(ep, "GET", "/v1/sse?stream=docs", {}, bearer(stranger), 403);
    auto r = run(ep, std::nullopt, {"--token", stranger, "watch", "docs", "--once"});
    INFO(describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "tidings: 403: " + message + "\n");
  }
}

TEST_CASE("cli watch-start, watch-list and watch-stop send the token", "[cli][security]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto token = node.token(token_spec().sub("ann"));
  const std::string uri = "stream://memo/notes";

  auto start = run(ep, std::nullopt, {"--token", token, "watch-start", "notes", uri});
  INFO("watch-start: " << describe(start));
  REQUIRE(start.exit_code == 0);
  CHECK(start.out.starts_with("started notes on " + uri));

  auto list = run(ep, token, {"watch-list", "--json"});
  INFO("watch-list: " << describe(list));
  REQUIRE(list.exit_code == 0);
  auto watches = json::parse(list.out, nullptr, false);
  REQUIRE(watches.is_array());
  REQUIRE(watches.size() == 1);
  CHECK(watches[0]["name"] == "notes");

  SECTION("without a token each is refused with the node's message") {
    const auto message = node_message(ep, "GET", "/v1/watches", {}, {}, 401);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"watch-start", "other", uri}, {"watch-list"}, {"watch-stop", "notes"}}) {
      auto r = run(ep, std::nullopt, args);
      INFO(args.front() << ": " << describe(r));
      CHECK(r.exit_code == 1);
      CHECK(r.out.empty());
      CHECK(contains(r.err, "tidings: " + message + "\n"));
    }
  }
  SECTION("a token without write on watch:notes cannot stop it") {
    const auto reader = node.token(token_spec().sub("rita").write({"docs"}));
    const auto message = node_message(ep, "DELETE", "/v1/watches/notes", {}, bearer(reader), 403);
    auto r = run(ep, std::nullopt, {"--token", reader, "watch-stop", "notes"});
    INFO(describe(r));
    CHECK(r.exit_code == 1);
    CHECK(r.err == "tidings: " + message + "\n");
  }
  SECTION("with the token it stops") {
    auto stop = run(ep, std::nullopt, {"watch-stop", "notes", "--token", token});
    INFO("watch-stop: " << describe(stop));
    CHECK(stop.exit_code == 0);
    CHECK(stop.out == "stopped notes\n");
  }
}

TEST_CASE("cli --token with an empty or multi-line value is a usage error that does not echo it",
          "[cli][security]") {
  tenant_node node;
  auto ep = node.endpoint();

  struct usage_case {
    std::optional<std::string> env_token;
    std::vector<std::string> args;
    std::string why;  // in the message
  };
  const std::vector<usage_case> cases = {
      {std::nullopt, {"--token", "", "publish", "docs", "{}"}, "--token wants a non-empty TOKEN"},
      {std::nullopt, {"watch", "docs", "--token="}, "--token wants a non-empty TOKEN"},
      {std::nullopt, {"watch-list", "--token"}, "--token needs a value"},
      {std::nullopt, {"--token", "secret-part\r\nX-Injected: 1", "watch-list"}, "--token must be one word"},
      {std::string("secret-part other"), {"watch-list"}, "TIDINGS_TOKEN must be one word"},
  };
  for (const auto& c : cases) {
    auto r = run(ep, c.env_token, c.args);
    INFO(c.why << ": " << describe(r));
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "tidings: " + c.why));
    CHECK(contains(r.err, "usage:"));
    CHECK_FALSE(contains(r.err, "secret-part"));
  }

  // An empty variable counts as unset: the node asks for a token.
  auto r = run(ep, std::string(), {"watch-list"});
  INFO("TIDINGS_TOKEN='': " << describe(r));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "missing token"));
}
