// The PostgreSQL LISTEN/NOTIFY connector against a real server (Debian's
// postgresql, started by tests/support/postgres_server on a loopback port).
// The upstream runs on an io_context driven by this thread until the awaited
// callback arrives or a deadline passes; nothing sleeps.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/read_extraction.hpp"
#include "sources/postgres/postgres_connector.hpp"
#include "sources/postgres/postgres_upstream.hpp"
#include "tests/sources/upstream_recorder.hpp"
#include "tests/support/postgres_server.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using tidings::sources::read_outcome;
using tidings::sources::upstream;
using tidings::sources::postgres::postgres_config;
using tidings::sources::postgres::postgres_connector;
using tidings::testing::await_process_exit;
using tidings::testing::pg_query;
using tidings::testing::postgres_server;

// One server for the tests that do not take it down (initdb costs seconds).
postgres_server& shared_server() {
  static postgres_server server;
  return server;
}

using recorder = tidings::sources::testing::upstream_recorder;

struct loop {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work =
      boost::asio::make_work_guard(io);

  // Runs handlers until `done()` holds; false when `timeout` passes first.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io.run_one_until(deadline);
    }
    return true;
  }

  read_outcome read(upstream& u) {
    std::optional<read_outcome> got;
    u.read([&](read_outcome o) { got = std::move(o); });
    REQUIRE(run_until([&] { return got.has_value(); }));
    return std::move(*got);
  }

  json events(upstream& u) {
    auto outcome = read(u);
    REQUIRE(outcome.result);
    CHECK(outcome.result->mime_type == tidings::core::event_log_mime_type);
    return json::parse(outcome.result->text).at("events");
  }

  // Reads after each `updated` until the log holds `count` events. The
  // count of updates is taken before each read, so one that lands while the
  // read runs is not missed.
  json await_events(upstream& u, recorder& r, std::size_t count) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    int seen = r.updated;
    json got = events(u);
    while (got.size() < count) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      REQUIRE(run_until([&] { return r.updated > seen; }, left));
      seen = r.updated;
      got = events(u);
    }
    return got;
  }
};

postgres_config config_for(const std::string& conninfo, std::string path_field = "") {
  postgres_config c;
  c.name = "db";
  c.conninfo = conninfo;
  c.path_field = std::move(path_field);
  c.connect_timeout = 10s;
  return c;
}

std::unique_ptr<upstream> open(postgres_connector& connector, const std::string& uri) {
  std::string error;
  auto u = connector.open(uri, &error);
  INFO(error);
  REQUIRE(u);
  return u;
}

void subscribe(loop& l, upstream& u, recorder& r) {
  int before = r.subscribed;
  auto ended_before = r.ended.size();
  u.subscribe(r.handlers());
  REQUIRE(l.run_until([&] { return r.subscribed > before || r.ended.size() > ended_before; }));
  INFO((r.ended.size() == ended_before ? std::string() : r.ended.back()));
  REQUIRE(r.subscribed == before + 1);
}

void notify(const std::string& conninfo, const std::string& quoted_channel, const std::string& payload) {
  pg_query(conninfo, "NOTIFY " + quoted_channel + ", '" + payload + "'");
}

// Backend PIDs LISTENing on exactly `quoted_channel`.
std::vector<int> listeners(const std::string& conninfo, const std::string& quoted_channel) {
  std::vector<int> pids;
  for (const auto& row :
       pg_query(conninfo, "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN " + quoted_channel + "'")) {
    pids.push_back(std::stoi(row.at(0)));
  }
  return pids;
}

// A loopback port nobody listens on (bound, never listened, then released).
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("NOTIFY payloads become events", "[postgres]") {
  auto& server = shared_server();
  loop l;
  postgres_connector connector(l.io, config_for(server.conninfo(), "id"));
  auto u = open(connector, "pg://db/orders");
  recorder r;
  subscribe(l, *u, r);
  CHECK(l.events(*u) == json::array());

  notify(server.conninfo(), "orders", R"({"type":"INSERT","id":"o-1","total":5})");
  auto events = l.await_events(*u, r, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0] == json{{"seq", 1},
                          {"type", "INSERT"},
                          {"path", "o-1"},
                          {"channel", "orders"},
                          {"payload", {{"type", "INSERT"}, {"id", "o-1"}, {"total", 5}}}});

  notify(server.conninfo(), "orders", "plain text");
  notify(server.conninfo(), "orders", R"({"no_id":true})");
  events = l.await_events(*u, r, 3);
  CHECK(events[1] == json{{"seq", 2},
                          {"type", "NOTIFY"},
                          {"path", "orders"},
                          {"channel", "orders"},
                          {"payload", "plain text"}});
  CHECK(events[2]["path"] == "orders");
  CHECK(events[2]["payload"] == json{{"no_id", true}});
  CHECK(r.ended.empty());
  u->close();
}

TEST_CASE("many notifications coalesce into few reads", "[postgres]") {
  auto& server = shared_server();
  loop l;
  postgres_connector connector(l.io, config_for(server.conninfo()));
  auto u = open(connector, "pg://db/bulk");
  recorder r;
  subscribe(l, *u, r);

  // One transaction: the server sends all 300 at commit, back to back.
  pg_query(server.conninfo(), "SELECT pg_notify('bulk', i::text) FROM generate_series(1, 300) AS i");
  auto events = l.await_events(*u, r, 300);
  REQUIRE(events.size() == 300);
  for (int i = 0; i < 300; ++i) {
    CHECK(events[i]["seq"] == i + 1);
    CHECK(events[i]["payload"] == i + 1);
  }
  // One wake per socket read, not one per notification.
  CHECK(r.updated < 300);
  u->close();
}

TEST_CASE("a channel name that needs quoting is listened to exactly", "[postgres]") {
  auto& server = shared_server();
  loop l;
  postgres_connector connector(l.io, config_for(server.conninfo()));
  auto spaced = open(connector, "pg://db/Order%20Events");
  auto quote = open(connector, "pg://db/a%22b");
  recorder rs;
  recorder rq;
  subscribe(l, *spaced, rs);
  subscribe(l, *quote, rq);

  notify(server.conninfo(), "order_events", "unquoted: another channel");
  notify(server.conninfo(), R"("Order Events")", "one");
  notify(server.conninfo(), R"("a""b")", "two");
  auto events = l.await_events(*spaced, rs, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["channel"] == "Order Events");
  CHECK(events[0]["payload"] == "one");
  events = l.await_events(*quote, rq, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["channel"] == "a\"b");
  CHECK(events[0]["payload"] == "two");
}

TEST_CASE("close() ends the LISTEN connection on the server", "[postgres]") {
  auto& server = shared_server();
  loop l;
  postgres_connector connector(l.io, config_for(server.conninfo()));
  auto u = open(connector, "pg://db/closing");
  recorder r;
  subscribe(l, *u, r);

  auto pids = listeners(server.conninfo(), R"("closing")");
  REQUIRE(pids.size() == 1);
  auto* pg = dynamic_cast<tidings::sources::postgres::postgres_upstream*>(u.get());
  REQUIRE(pg);
  CHECK(pg->backend_pid() == pids[0]);

  bool read_done = false;
  u->read([&](read_outcome) { read_done = true; });
  u->close();
  // The backend exits once it sees the connection end.
  REQUIRE(await_process_exit(pids[0], 10s));
  CHECK(pg_query(server.conninfo(), "SELECT count(*) FROM pg_stat_activity WHERE pid = " +
                                        std::to_string(pids[0])) == tidings::testing::pg_rows{{"0"}});
  CHECK(listeners(server.conninfo(), R"("closing")").empty());
  l.io.poll();  // whatever was queued: none of it may reach a handler now
  CHECK_FALSE(read_done);
  CHECK(r.ended.empty());
  CHECK(r.updated == 0);

  SECTION("the connector's stop() closes the upstreams it opened") {
    auto other = open(connector, "pg://db/stopping");
    recorder r2;
    subscribe(l, *other, r2);
    auto other_pids = listeners(server.conninfo(), R"("stopping")");
    REQUIRE(other_pids.size() == 1);
    connector.stop();
    REQUIRE(await_process_exit(other_pids[0], 10s));
    l.io.poll();
    CHECK(r2.ended.empty());
  }
}

TEST_CASE("connection errors end the subscription with libpq's message", "[postgres]") {
  loop l;
  recorder r;

  SECTION("nothing listens on the port") {
    auto conninfo = "host=127.0.0.1 port=" + std::to_string(closed_port()) + " dbname=postgres user=postgres";
    postgres_connector connector(l.io, config_for(conninfo));
    auto u = open(connector, "pg://db/x");
    u->subscribe(r.handlers());
    CHECK(r.ended.empty());  // never inside subscribe()
    REQUIRE(l.run_until([&] { return !r.ended.empty(); }));
    CHECK_THAT(r.ended[0], Catch::Contains("Connection refused"));
    CHECK(r.ended[0].find('\n') == std::string::npos);
    CHECK(r.subscribed == 0);

    std::optional<std::string> start_error;
    connector.start([&](std::string e) { start_error = std::move(e); });
    REQUIRE(l.run_until([&] { return start_error.has_value(); }));
    CHECK_THAT(*start_error, Catch::Contains("Connection refused"));
  }
  SECTION("a malformed connection string") {
    postgres_connector connector(l.io, config_for("host=127.0.0.1 bogus=1"));
    auto u = open(connector, "pg://db/x");
    u->subscribe(r.handlers());
    REQUIRE(l.run_until([&] { return !r.ended.empty(); }));
    CHECK(r.ended[0] == R"(invalid connection string: invalid connection option "bogus")");

    postgres_connector uri_connector(l.io, config_for("postgresql://[::1"));
    auto v = open(uri_connector, "pg://db/x");
    recorder rv;
    v->subscribe(rv.handlers());
    REQUIRE(l.run_until([&] { return !rv.ended.empty(); }));
    CHECK_THAT(rv.ended[0], Catch::StartsWith("invalid connection string: "));
  }
  SECTION("a server that never answers: the connect timeout") {
    // Listening without accepting: the kernel completes the handshake, the
    // startup packet is never answered.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    auto config = config_for("host=127.0.0.1 port=" + std::to_string(ntohs(addr.sin_port)) +
                             " dbname=postgres user=postgres sslmode=disable");
    config.connect_timeout = 300ms;
    postgres_connector connector(l.io, config);
    auto u = open(connector, "pg://db/x");
    u->subscribe(r.handlers());
    REQUIRE(l.run_until([&] { return !r.ended.empty(); }, 10s));
    CHECK(r.ended[0] == "timed out after 300 ms");
    ::close(fd);
  }
  SECTION("a server that refuses the login: the server's message") {
    auto& server = shared_server();
    pg_query(server.conninfo(),
             "DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'nologin') THEN "
             "CREATE ROLE nologin NOLOGIN; END IF; END$$");
    postgres_connector connector(l.io, config_for(server.conninfo() + " user=nologin"));
    auto u = open(connector, "pg://db/x");
    u->subscribe(r.handlers());
    REQUIRE(l.run_until([&] { return !r.ended.empty(); }));
    CHECK_THAT(r.ended[0], Catch::Contains("role \"nologin\" is not permitted to log in"));
  }
}

TEST_CASE("malformed pg:// URIs are refused at open", "[postgres]") {
  loop l;
  postgres_connector connector(l.io, config_for("host=127.0.0.1"));
  std::string error;
  CHECK_FALSE(connector.open("pg://other/x", &error));
  CHECK(error == "pg:db: pg://other/x: pg://other is not database db");
  CHECK_FALSE(connector.open("pg://db/", &error));
  CHECK(error == "pg:db: pg://db/: the channel is empty");
  CHECK_FALSE(connector.open("pg://db/" + std::string(64, 'c'), &error));

  std::optional<read_outcome> got;
  connector.read("pg://db/a/b", [&](read_outcome o) { got = std::move(o); });
  REQUIRE(l.run_until([&] { return got.has_value(); }));
  CHECK_FALSE(got->result);
  CHECK_THAT(got->error, Catch::StartsWith("pg:db: pg://db/a/b: "));
}

TEST_CASE("the connector lists its template and reads channels one-off", "[postgres]") {
  auto& server = shared_server();
  loop l;
  postgres_connector connector(l.io, config_for(server.conninfo()));
  CHECK(connector.name() == "pg:db");

  auto resources = connector.resources();
  REQUIRE(resources.size() == 1);
  CHECK(resources[0].uri == "pg://db/{channel}");
  CHECK(resources[0].template_);
  CHECK(resources[0].subscribable);
  CHECK(resources[0].server == "pg:db");
  CHECK(resources[0].mime_type == tidings::core::event_log_mime_type);
  CHECK(resources[0].example == "pg://db/changes");
  CHECK_THAT(resources[0].description, Catch::EndsWith("\nExample: pg://db/changes"));

  CHECK(connector.canonical("pg://db/a%62c") == "pg://db/abc");
  CHECK(connector.canonical("pg://db/Order%20Events") == "pg://db/Order%20Events");

  std::optional<std::string> start_error;
  connector.start([&](std::string e) { start_error = std::move(e); });
  REQUIRE(l.run_until([&] { return start_error.has_value(); }));
  CHECK(*start_error == "");

  auto read_one_off = [&](const std::string& uri) {
    std::optional<read_outcome> got;
    connector.read(uri, [&](read_outcome o) { got = std::move(o); });
    REQUIRE(l.run_until([&] { return got.has_value(); }));
    REQUIRE(got->result);
    CHECK(got->result->mime_type == tidings::core::event_log_mime_type);
    return json::parse(got->result->text).at("events");
  };
  CHECK(read_one_off("pg://db/oneoff") == json::array());

  auto u = open(connector, "pg://db/oneoff");
  recorder r;
  subscribe(l, *u, r);
  notify(server.conninfo(), "oneoff", "hi");
  l.await_events(*u, r, 1);
  auto events = read_one_off("pg://db/oneoff");
  REQUIRE(events.size() == 1);
  CHECK(events[0]["payload"] == "hi");
}

TEST_CASE("a killed server ends the subscription, after its restart a GAP comes first", "[postgres]") {
  postgres_server server;  // its own: this test takes it down
  loop l;
  postgres_connector connector(l.io, config_for(server.conninfo()));
  auto u = open(connector, "pg://db/crash");
  recorder r;
  subscribe(l, *u, r);
  notify(server.conninfo(), "crash", "before");
  l.await_events(*u, r, 1);

  server.kill();
  REQUIRE(l.run_until([&] { return !r.ended.empty(); }));
  CHECK_THAT(r.ended[0], Catch::Contains("server closed the connection unexpectedly"));

  // The source's backoff tries again while the server is still down.
  u->subscribe(r.handlers());
  REQUIRE(l.run_until([&] { return r.ended.size() == 2; }));
  CHECK_THAT(r.ended[1], Catch::Contains("Connection refused"));

  server.start();
  subscribe(l, *u, r);
  CHECK(r.subscribed == 2);
  notify(server.conninfo(), "crash", "after");
  auto events = l.await_events(*u, r, 3);
  REQUIRE(events.size() == 3);
  CHECK(events[0]["payload"] == "before");
  CHECK(events[1] == json{{"seq", 2},
                          {"type", "GAP"},
                          {"path", "crash"},
                          {"channel", "crash"},
                          {"reason", "reconnected: notifications sent while disconnected are lost"}});
  CHECK(events[2]["seq"] == 3);
  CHECK(events[2]["payload"] == "after");

  SECTION("a shutdown names the server's reason") {
    server.stop();
    REQUIRE(l.run_until([&] { return r.ended.size() == 3; }));
    CHECK_THAT(r.ended[2], Catch::Contains("terminating connection due to administrator command"));
  }
}
