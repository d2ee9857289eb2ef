// Bad input gets a clear 4xx with a JSON {"error"} body, and nothing already
// accepted is lost: after every refusal a normal publish and read still work.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

const client::header_list json_type{{"Content-Type", "application/json"}};

void check_error_body(const std::string& body) {
  INFO("error body: " << body);
  auto j = json::parse(body, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  REQUIRE(j.is_object());
  CHECK(j["error"].is_string());
  CHECK_FALSE(j["error"].get<std::string>().empty());
}

void check_refused(const client::http_response& r, int status) {
  INFO("status " << r.status << ", body " << r.body);
  CHECK(r.status == status);
  check_error_body(r.body);
}

// Tracks what the node has accepted so that every check can prove it is all still there.
struct accepted_log {
  client::endpoint ep;
  std::vector<std::string> cursors;

  void publish_and_verify() {
    cursors.push_back(publish(ep, "good", event_json("/ok", "ADDED", cursors.size())));
    auto history = read_history(ep, "good");
    REQUIRE(history.size() == cursors.size());
    for (std::size_t i = 0; i < cursors.size(); ++i) CHECK(history[i]["cursor"] == cursors[i]);
  }
};

}  // namespace

TEST_CASE("bad requests are refused with JSON errors and leave the node healthy", "[bad-input]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--max-body-bytes", "1024"});
  auto ep = node.endpoint();
  accepted_log good{ep, {}};
  good.publish_and_verify();
  auto post = [&](const std::string& target, const std::string& body,
                  const client::header_list& headers = json_type) {
    return client::request(ep, "POST", target, body, headers);
  };

  SECTION("malformed JSON") {
    check_refused(post(events_target("good"), "{\"path\": \"/a\""), 400);
    check_refused(post(events_target("good"), "not json"), 400);
  }
  SECTION("a body over --max-body-bytes") {
    check_refused(post(events_target("good"), event_json("/big", "ADDED", std::string(2000, 'x'))), 413);
  }
  SECTION("bad stream names") {
    check_refused(post(events_target("Upper"), event_json("/a", "ADDED", 1)), 400);
    check_refused(post(events_target("_lead"), event_json("/a", "ADDED", 1)), 400);
    check_refused(post(events_target(std::string(129, 'a')), event_json("/a", "ADDED", 1)), 400);
    check_refused(post(events_target("sp%20ace"), event_json("/a", "ADDED", 1)), 400);
  }
  SECTION("bad events") {
    check_refused(post(events_target("good"), R"({"path":"/a","colour":"red"})"), 400);
    check_refused(post(events_target("good"), "[]"), 400);
    check_refused(post(events_target("good"), R"({"path":"no-slash"})"), 400);
    check_refused(post(events_target("good"), R"({"path":"/a","type":"has space"})"), 400);
    check_refused(post(events_target("good"), R"({"path":"/a","type":""})"), 400);
    check_refused(post(events_target("good"), R"({"path":"/a\u0001b"})"), 400);
    check_refused(post(events_target("good"), "42"), 400);
    // One bad event refuses the whole array: nothing of it is appended.
    check_refused(post(events_target("good"), "[" + event_json("/fine", "ADDED", 1) + R"(,{"path":"bad"}])"),
                  400);
  }
  SECTION("a Content-Type that is not JSON") {
    check_refused(post(events_target("good"), event_json("/a", "ADDED", 1), {{"Content-Type", "text/plain"}}),
                  415);
  }
  SECTION("unknown route and wrong method") {
    check_refused(client::request(ep, "GET", "/v1/nothing-here"), 404);
    check_refused(client::request(ep, "GET", "/v2/streams/good/events"), 404);
    check_refused(client::request(ep, "DELETE", events_target("good")), 405);
    check_refused(client::request(ep, "PUT", events_target("good"), "{}", json_type), 405);
    check_refused(client::request(ep, "POST", "/v1/sse?stream=good", "{}", json_type), 405);
  }
  SECTION("bad history parameters") {
    check_refused(client::request(ep, "GET", events_target("good") + "?since=nonsense"), 400);
    check_refused(client::request(ep, "GET", events_target("good") + "?limit=0"), 400);
    check_refused(client::request(ep, "GET", events_target("good") + "?limit=1001"), 400);
    check_refused(client::request(ep, "GET", events_target("good") + "?limit=ten"), 400);
    check_refused(client::request(ep, "GET", events_target("missing")), 404);
    check_refused(client::request(ep, "GET", "/v1/streams/missing"), 404);
  }
  SECTION("bad SSE requests are refused before the stream starts") {
    auto refused = [&](const std::string& target, const client::header_list& headers) {
      client::sse_stream s(ep, target, headers);
      INFO("target " << target << ", status " << s.status() << ", body " << s.error_body());
      CHECK(s.status() == 400);
      check_error_body(s.error_body());
    };
    refused("/v1/sse", {});
    refused(sse_target({"Bad Name"}), {});
    refused(sse_target({"good:no-slash"}), {});
    refused(sse_target({"good"}), {{"Last-Event-ID", "not-a-cursor"}});
    refused(sse_target({"good"}), {{"Last-Event-ID", good.cursors[0] + "x"}});
    refused(sse_target({"good"}), {{"Last-Event-ID", good.cursors[0] + "," + good.cursors[0]}});
    refused(sse_target({"good", "other"}), {{"Last-Event-ID", good.cursors[0]}});
    refused(sse_target({"good"}, "12:zz"), {});
    std::vector<std::string> seventeen(17, "good");
    refused(sse_target(seventeen), {});
  }
  SECTION("a header block over the limit") {
    std::string raw =
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: " + std::string(64 * 1024, 'h') + "\r\n\r\n";
    auto reply = client::raw_exchange(ep, raw, 5s);
    INFO("reply: " << reply.substr(0, 300));
    CHECK(reply.rfind("HTTP/1.1 431", 0) == 0);
    auto body_at = reply.find("\r\n\r\n");
    REQUIRE(body_at != std::string::npos);
    check_error_body(reply.substr(body_at + 4));
  }
  SECTION("garbage instead of HTTP") {
    auto reply = client::raw_exchange(ep, "NOT HTTP AT ALL\r\n\r\n", 5s);
    INFO("reply: " << reply.substr(0, 300));
    CHECK(reply.rfind("HTTP/1.1 400", 0) == 0);
  }

  good.publish_and_verify();
}

TEST_CASE("a payload with line breaks arrives intact as one event", "[bad-input][framing]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  client::sse_stream session(ep, sse_target({"text"}));
  await_hello(session);

  const json data = {{"text", "line1\nline2\r\nline3\rline4\n\nafter a blank line\n"},
                     {"list", {"a\n", "\r"}}};
  auto first = publish(ep, "text", event_json("/t", "ADDED", data));
  // Raw line breaks between JSON tokens too: the node must not let them break the framing.
  auto second =
      publish(ep, "text", "{\n  \"path\": \"/pretty\",\r\n  \"data\": {\n    \"k\": [1,\n2]\n  }\n}\n");
  auto sentinel = publish(ep, "text", event_json("/end", "ADDED", "end"));

  auto got = collect_data_events(session, 3, 5s);
  INFO("ended " << to_string(got.ended));
  REQUIRE(got.events.size() == 3);
  CHECK(got.events[0].cursor == first);
  CHECK(got.events[0].data == data);
  CHECK(got.events[1].cursor == second);
  CHECK(got.events[1].path == "/pretty");
  CHECK(got.events[1].data == json{{"k", {1, 2}}});
  CHECK(got.events[2].cursor == sentinel);

  // History returns the same bytes' meaning.
  auto history = read_history(ep, "text");
  REQUIRE(history.size() == 3);
  CHECK(history[0]["data"] == data);
}
