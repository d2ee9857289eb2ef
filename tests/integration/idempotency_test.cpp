// A retried publish with the same Idempotency-Key is answered from the
// original reply and appends nothing.

#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

client::http_response post(client::http_connection& conn, const std::string& stream, const std::string& body,
                           const std::string& key) {
  return conn.request("POST", events_target(stream), body,
                      {{"Content-Type", "application/json"}, {"Idempotency-Key", key}});
}

json stream_info(client::http_connection& conn, const std::string& stream) {
  auto r = conn.request("GET", "/v1/streams/" + stream);
  REQUIRE(r.status == 200);
  return parse_body(r);
}

}  // namespace

TEST_CASE("the same Idempotency-Key replays the original reply", "[idempotency]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  client::http_connection conn(node.endpoint());
  const auto body = event_json("/a", "ADDED", {{"v", 1}});

  auto original = post(conn, "docs", body, "key-1");
  REQUIRE(original.status == 201);
  CHECK(original.headers.count("idempotent-replay") == 0);
  const auto cursor = parse_body(original)["cursor"];
  REQUIRE(cursor.is_string());

  auto retry = post(conn, "docs", body, "key-1");
  INFO("retry reply: " << retry.body);
  CHECK(retry.status == 200);
  CHECK(retry.headers["idempotent-replay"] == "true");
  CHECK(parse_body(retry)["cursor"] == cursor);

  auto info = stream_info(conn, "docs");
  CHECK(info["head"] == cursor);
  CHECK(info["events"] == 1);

  auto other = post(conn, "docs", body, "key-2");
  REQUIRE(other.status == 201);
  auto other_cursor = cursor_of(parse_body(other)["cursor"].get<std::string>());
  CHECK(other_cursor.seq == 2);
  CHECK(stream_info(conn, "docs")["events"] == 2);

  // No key: every request appends.
  publish(conn, "docs", body);
  publish(conn, "docs", body);
  CHECK(stream_info(conn, "docs")["events"] == 4);
}

TEST_CASE("an array publish replays all its cursors and keys are per stream", "[idempotency]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  client::http_connection conn(node.endpoint());
  const auto array = "[" + event_json("/a", "ADDED", 1) + "," + event_json("/b", "ADDED", 2) + "]";

  auto original = post(conn, "docs", array, "batch-1");
  REQUIRE(original.status == 201);
  const auto cursors = parse_body(original)["cursors"];
  REQUIRE(cursors.size() == 2);

  auto retry = post(conn, "docs", array, "batch-1");
  INFO("retry reply: " << retry.body);
  CHECK(retry.status == 200);
  CHECK(retry.headers["idempotent-replay"] == "true");
  CHECK(parse_body(retry)["cursors"] == cursors);
  auto info = stream_info(conn, "docs");
  CHECK(info["head"] == cursors[1]);
  CHECK(info["events"] == 2);

  // The same key on another stream is another request.
  auto elsewhere = post(conn, "other", array, "batch-1");
  CHECK(elsewhere.status == 201);
  CHECK(elsewhere.headers.count("idempotent-replay") == 0);
  CHECK(stream_info(conn, "other")["events"] == 2);
  CHECK(stream_info(conn, "docs")["events"] == 2);
}

TEST_CASE("a malformed Idempotency-Key is refused", "[idempotency]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  client::http_connection conn(node.endpoint());
  auto r = post(conn, "docs", event_json("/a", "ADDED", 1), std::string(201, 'k'));
  CHECK(r.status == 400);
  CHECK(parse_body(r)["error"].is_string());
}
