// `tidings admin ...` against a node with tenants: the views print aligned
// tables (or the server's JSON), a refusal prints the node's message and
// exits 1, a bad command line exits 2.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/integration/cli_invocation.hpp"
#include "tests/support/command_run.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"

namespace {

using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

command_result admin(const client::endpoint& ep, const std::string& token, std::vector<std::string> args) {
  std::vector<std::string> full{"--token", token, "admin"};
  for (auto& a : args) full.push_back(std::move(a));
  return run_command(cli(ep, std::move(full)), std::nullopt, command_timeout);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("cli admin sessions prints a table of the live sessions", "[cli][admin]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto ann = node.token(token_spec().sub("ann"));
  const auto ops = node.token(token_spec().tenant("ops").sub("oli").admin(true));
  client::sse_stream a(ep, "/v1/sse?stream=docs&stream=notes:/x", bearer(ann));
  client::sse_stream b(ep, "/v1/sse?stream=news",
                       bearer(node.token(token_spec().tenant("globex").sub("gus"))));
  await_hello(a);
  await_hello(b);

  auto table = admin(ep, ops, {"sessions"});
  INFO(describe(table));
  REQUIRE(table.exit_code == 0);
  auto lines = lines_of(table.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].starts_with("ID"));
  for (const char* column : {"TENANT", "SUBJECT", "STREAMS", "QUEUE", "AGE", "REMOTE"})
    CHECK(contains(lines[0], column));
  // Sorted by tenant: acme's ann first; columns line up under their headers.
  CHECK(contains(lines[1], "acme"));
  CHECK(contains(lines[1], "ann"));
  CHECK(contains(lines[1], "docs,notes:/x"));
  CHECK(contains(lines[2], "globex"));
  CHECK(lines[1].find("ann") == lines[0].find("SUBJECT"));
  CHECK(lines[2].find("gus") == lines[0].find("SUBJECT"));
  CHECK_FALSE(contains(table.out, ann));

  auto raw = admin(ep, ops, {"sessions", "--json"});
  REQUIRE(raw.exit_code == 0);
  CHECK(json::parse(raw.out)["sessions"].size() == 2);

  auto nodes = admin(ep, ops, {"nodes"});
  REQUIRE(nodes.exit_code == 0);
  CHECK(contains(nodes.out, "alive (self)"));
  auto tenants = admin(ep, ops, {"tenants"});
  REQUIRE(tenants.exit_code == 0);
  CHECK(lines_of(tenants.out).size() == 4);  // header, acme, globex, ops
  auto watchers = admin(ep, ops, {"watches"});
  REQUIRE(watchers.exit_code == 0);
  CHECK(watchers.out == "no watchers (nothing is subscribed upstream)\n");
}

TEST_CASE("cli admin: refusals exit 1 with the node's message, usage errors 2", "[cli][admin]") {
  tenant_node node;
  auto ep = node.endpoint();
  const auto ann = node.token(token_spec().sub("ann"));
  const auto acme_admin = node.token(token_spec().sub("root").admin(true));

  auto not_admin = admin(ep, ann, {"sessions"});
  INFO(describe(not_admin));
  CHECK(not_admin.exit_code == 1);
  CHECK(not_admin.out.empty());
  CHECK(contains(not_admin.err, "403"));
  CHECK(contains(not_admin.err, "tidings.admin"));
  CHECK_FALSE(contains(not_admin.err, ann));

  auto drain = admin(ep, acme_admin, {"drain"});
  CHECK(drain.exit_code == 1);
  CHECK(contains(drain.err, "operator"));

  auto revoke = admin(ep, acme_admin, {"revoke", "--sub", "bob"});
  INFO(describe(revoke));
  CHECK(revoke.exit_code == 0);
  CHECK(revoke.out == "revoked every token of bob in acme\n");

  for (const std::vector<std::string>& bad : {std::vector<std::string>{"revoke"},
                                              {"revoke", "--jti", "a", "--sub", "b"},
                                              {"drain", "--jti", "a"},
                                              {"reload", "--json"},
                                              {"colours"},
                                              {}}) {
    auto r = admin(ep, acme_admin, bad);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
  }
}
