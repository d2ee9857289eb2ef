// Pure parts of the PostgreSQL connector: pg:// URIs, NOTIFY payloads as
// event-log entries, the bounded ring.

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sources/postgres/postgres_events.hpp"
#include "sources/postgres/postgres_uri.hpp"

using namespace tidings::sources::postgres;
using nlohmann::json;

TEST_CASE("pg:// URIs name one channel of one database", "[postgres]") {
  std::string error;
  CHECK(parse_channel_uri("app", "pg://app/orders", &error) == "orders");
  CHECK(parse_channel_uri("app", "pg://app/Order%20Events", &error) == "Order Events");
  CHECK(parse_channel_uri("app", "pg://app/a%22b", &error) == "a\"b");
  CHECK(parse_channel_uri("app", "pg://app/a%2Fb", &error) == "a/b");

  CHECK_FALSE(parse_channel_uri("app", "pg://other/orders", &error));
  CHECK(error == "pg://other is not database app");
  CHECK_FALSE(parse_channel_uri("app", "pg://app/", &error));
  CHECK(error == "the channel is empty");
  CHECK_FALSE(parse_channel_uri("app", "pg://app", &error));
  CHECK_FALSE(parse_channel_uri("app", "pg://app/a/b", &error));
  CHECK_FALSE(parse_channel_uri("app", "pg://app/a?x=1", &error));
  CHECK_FALSE(parse_channel_uri("app", "pg://app/a%2", &error));
  CHECK(error == "malformed percent-encoding in the channel");
  CHECK_FALSE(parse_channel_uri("app", "pg://app/a%0Ab", &error));
  CHECK(error == "the channel holds a control character");
  CHECK_FALSE(parse_channel_uri("app", "pg://app/" + std::string(64, 'x'), &error));
  CHECK(parse_channel_uri("app", "pg://app/" + std::string(63, 'x'), &error));
  CHECK_FALSE(parse_channel_uri("app", "http://app/orders", &error));

  CHECK(channel_uri("app", "Order Events") == "pg://app/Order%20Events");
  CHECK(channel_uri("app", "orders_v2") == "pg://app/orders_v2");
}

TEST_CASE("a NOTIFY payload becomes an event-log entry", "[postgres]") {
  SECTION("JSON object: type from its type field, path from the path field") {
    auto e = notify_event("orders", R"({"type":"INSERT","id":42,"row":{"name":"a"}})", "id");
    CHECK(e == json{{"type", "INSERT"},
                    {"path", "42"},
                    {"channel", "orders"},
                    {"payload", {{"type", "INSERT"}, {"id", 42}, {"row", {{"name", "a"}}}}}});
  }
  SECTION("a JSON pointer reaches into the payload") {
    auto e = notify_event("orders", R"({"row":{"key":"k-1"}})", "/row/key");
    CHECK(e["path"] == "k-1");
    CHECK(e["type"] == "NOTIFY");
  }
  SECTION("no path field configured, missing, or not a scalar: the channel") {
    CHECK(notify_event("orders", R"({"id":"7"})", "")["path"] == "orders");
    CHECK(notify_event("orders", R"({"x":"7"})", "id")["path"] == "orders");
    CHECK(notify_event("orders", R"({"id":{"a":1}})", "id")["path"] == "orders");
    CHECK(notify_event("orders", R"({"id":"7"})", "/no/such")["path"] == "orders");
    CHECK(notify_event("orders", R"({"id":"7"})", "/bad~pointer")["path"] == "orders");
  }
  SECTION("text payloads stay text") {
    auto e = notify_event("jobs", "job 17 done", "id");
    CHECK(e == json{{"type", "NOTIFY"}, {"path", "jobs"}, {"channel", "jobs"}, {"payload", "job 17 done"}});
    CHECK(notify_event("jobs", "", "")["payload"] == "");
    CHECK(notify_event("jobs", "{broken", "")["payload"] == "{broken");
  }
  SECTION("a non-string or empty type field does not name the type") {
    CHECK(notify_event("c", R"({"type":3})", "")["type"] == "NOTIFY");
    CHECK(notify_event("c", R"({"type":""})", "")["type"] == "NOTIFY");
    CHECK(notify_event("c", R"(["type"])", "")["type"] == "NOTIFY");
  }
  SECTION("JSON nested deeper than 256 levels is kept as text") {
    std::string deep = std::string(300, '[') + std::string(300, ']');
    CHECK(notify_event("c", deep, "")["payload"] == deep);
    std::string ok = std::string(200, '[') + std::string(200, ']');
    CHECK(notify_event("c", ok, "")["payload"].is_array());
  }
}

TEST_CASE("the event ring numbers entries and keeps the newest", "[postgres]") {
  event_ring ring(3);
  CHECK(ring.text() == R"({"events":[]})");
  for (int i = 1; i <= 5; ++i) ring.append(notify_event("c", std::to_string(i), ""));
  ring.append(gap_event("c"));
  auto events = json::parse(ring.text())["events"];
  REQUIRE(events.size() == 3);
  CHECK(events[0]["seq"] == 4);
  CHECK(events[0]["payload"] == 4);
  CHECK(events[1]["seq"] == 5);
  CHECK(events[2] == json{{"seq", 6},
                          {"type", "GAP"},
                          {"path", "c"},
                          {"channel", "c"},
                          {"reason", "reconnected: notifications sent while disconnected are lost"}});
  CHECK(ring.last_seq() == 6);

  event_ring bytes(2);
  bytes.append(notify_event("c", "\xff\xfe not UTF-8", ""));
  CHECK_NOTHROW(json::parse(bytes.text()));
}
