// sql_polling through the real tidingsd against a real PostgreSQL (issue
// 24, seeds/001): a tracking query's value that moves is a change, one that
// stays is none, a read without a source runs the query once, a query of
// the wrong shape is refused with what it returned, and a template's URIs
// each run the query with their variable as a parameter.

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

client::http_response read_resource(const client::endpoint& ep, const std::string& uri) {
  return client::request(ep, "GET", "/v1/resources/read?uri=" + client::url_encode(uri));
}

}  // namespace

TEST_CASE("sql_polling through tidingsd: the tracking value moving is a change, a wrong shape says why",
          "[sources][postgres][sql_polling]") {
  postgres_server pg;
  pg_query(pg.conninfo(), "CREATE TABLE orders (id serial PRIMARY KEY, updated_at bigint NOT NULL)");
  pg_query(pg.conninfo(), "INSERT INTO orders (updated_at) VALUES (1)");
  // The tracking query counts its own runs, so the test can await polls.
  pg_query(pg.conninfo(), "CREATE TABLE polls (n int NOT NULL); INSERT INTO polls VALUES (0)");
  pg_query(pg.conninfo(), "CREATE TABLE accounts (name text PRIMARY KEY, version bigint NOT NULL)");
  pg_query(pg.conninfo(), "INSERT INTO accounts VALUES ('o''brien', 7), ('x', 1)");
  pg_query(pg.conninfo(),
           "CREATE FUNCTION tracked() RETURNS bigint LANGUAGE sql AS "
           "$$ UPDATE polls SET n = n + 1; SELECT max(updated_at) FROM orders $$");
  auto polls = [&pg] { return std::stoi(pg_query(pg.conninfo(), "SELECT n FROM polls").at(0).at(0)); };
  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n"
                        "  poll_floor_ms: 100\n"
                        "  resources:\n"
                        "    - uri: db://orders\n"
                        "      watch: {strategy: {type: sql_polling, conninfo: \""
                     << pg.conninfo()
                     << "\", query: \"SELECT tracked()\", interval_ms: 100}}\n"
                        "    - uri: db://rows\n"
                        "      watch: {strategy: {type: sql_polling, conninfo: \""
                     << pg.conninfo()
                     << "\", query: \"SELECT id, updated_at FROM orders\", interval_ms: 100}}\n"
                        "    - uri_template: \"db://account/{name}\"\n"
                        "      watch: {strategy: {type: sql_polling, conninfo: \""
                     << pg.conninfo()
                     << "\", query: \"SELECT version FROM accounts WHERE name = $1\", params: [\"{name}\"], "
                        "interval_ms: 100}}\n";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string(), "--source-backoff-ms", "50"});
  auto ep = node.endpoint();

  // Without a source, a read runs the query once.
  auto once = read_resource(ep, "db://orders");
  REQUIRE(once.status == 200);
  CHECK(json::parse(once.body) == json{{"value", "1"}});
  auto wrong = read_resource(ep, "db://rows");
  CHECK(wrong.status == 502);
  CHECK(wrong.body.find("the tracking query must return one row of one column; it returned 1 row(s) of 2 "
                        "column(s)") != std::string::npos);

  client::sse_stream session(ep, uri_target("db://orders"));
  await_hello(session);
  // A row whose value does not move the maximum is no change: three polls
  // later the source has read nothing more (an update would have made it read).
  auto reads = [&ep] {
    for (const auto& s : json::parse(client::request(ep, "GET", "/v1/sources").body))
      if (s["uri"] == "db://orders") return s["reads"].get<int>();
    return -1;
  };
  const int reads_before = reads();
  REQUIRE(reads_before >= 1);
  pg_query(pg.conninfo(), "INSERT INTO orders (updated_at) VALUES (1)");
  const int polled = polls();
  REQUIRE(poll_until(10s, [&] { return polls() >= polled + 3; }));
  CHECK(reads() == reads_before);
  // The next that does is.
  pg_query(pg.conninfo(), "UPDATE orders SET updated_at = 2 WHERE id = 1");
  auto got = collect_data_events(session, 1, 10s);
  REQUIRE(got.events.size() == 1);
  INFO(got.events[0].data.dump());
  CHECK(got.events[0].data.dump().find("\"2\"") != std::string::npos);
  pg_query(pg.conninfo(), "UPDATE orders SET updated_at = 3");
  got = collect_data_events(session, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].data.dump().find("\"3\"") != std::string::npos);
  CHECK(got.events[0].data.dump().find("\"2\"") != std::string::npos);  // the old value, beside the new

  // A template: each URI's variable is the query's $1, a parameter (a
  // quote in it is data, not SQL).
  auto account = read_resource(ep, "db://account/o'brien");
  REQUIRE(account.status == 200);
  CHECK(json::parse(account.body) == json{{"value", "7"}});
  client::sse_stream x(ep, uri_target("db://account/x"));
  await_hello(x);
  pg_query(pg.conninfo(), "UPDATE accounts SET version = 2 WHERE name = 'x'");
  got = collect_data_events(x, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].data["uri"] == "db://account/x");
  CHECK(got.events[0].data.dump().find("\"2\"") != std::string::npos);
}
