// Inputs found by a hostile pass over the API: each once crashed the node,
// grew its memory without bound, or broke the HTTP or JSON contract.

#include <catch2/catch.hpp>

#include <map>
#include <memory>
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

// The node answers a plain request after whatever came before.
void check_still_serving(const client::endpoint& ep) {
  auto r = client::request(ep, "GET", "/healthz");
  CHECK(r.status == 200);
}

std::string headers_of(const std::string& reply) {
  return reply.substr(0, reply.find("\r\n\r\n") + 4);
}

}  // namespace

TEST_CASE("a deeply nested document is refused with 400, not a crash", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  const std::size_t levels = 100000;
  std::string deep = "{\"data\":" + std::string(levels, '[') + std::string(levels, ']') + "}";
  const client::header_list json_type{{"Content-Type", "application/json"}};
  auto r = client::request(ep, "POST", events_target("deep"), deep, json_type);
  INFO(r.body.substr(0, 200));
  CHECK(r.status == 400);
  CHECK(parse_body(r)["error"].get<std::string>().find("nests deeper") != std::string::npos);
  // 128 levels are still fine.
  std::string ok = "{\"data\":" + std::string(127, '[') + std::string(127, ']') + "}";
  CHECK(client::request(ep, "POST", events_target("deep"), ok, json_type).status == 201);
  check_still_serving(ep);
}

TEST_CASE("HEAD gets the headers of GET and no body", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  // Two requests on one connection: a body after HEAD would be read as the
  // start of the second response.
  auto reply = client::raw_exchange(ep,
                                    "HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                                    5s);
  INFO(reply);
  auto first = headers_of(reply);
  CHECK(first.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(first.find("Content-Length: 15") != std::string::npos);
  auto second = reply.substr(first.size());
  CHECK(second.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(second.find("{\"status\":\"ok\"}") != std::string::npos);
}

TEST_CASE("a Transfer-Encoding other than chunked is refused and the connection closed", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  // Were the body left unread, the publish inside it would run as a second request.
  std::string smuggled =
      "POST /v1/streams/sm/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}";
  auto reply = client::raw_exchange(
      ep, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: identity\r\n\r\n" + smuggled, 5s);
  INFO(reply);
  CHECK(reply.rfind("HTTP/1.1 501", 0) == 0);
  CHECK(reply.find("HTTP/1.1 201") == std::string::npos);
  CHECK(client::request(ep, "GET", "/v1/streams/sm").status == 404);
  check_still_serving(ep);
}

TEST_CASE("error bodies stay valid JSON when the input is not valid UTF-8", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  for (auto target : {std::string("/v1/streams/a/events?since=%ff%fe"), std::string("/v1/sse?stream=%ff"),
                      std::string("/v1/streams/%ff%fe")}) {
    auto r = client::request(ep, "GET", target);
    INFO(target << " -> " << r.status << " " << r.body);
    CHECK(r.status == 400);
    auto j = json::parse(r.body, nullptr, false);  // strict UTF-8
    CHECK_FALSE(j.is_discarded());
  }
}

TEST_CASE("Content-Type is matched as a media type", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto with_type = [&](const std::string& type) {
    return client::request(ep, "POST", events_target("ct"), "{}", {{"Content-Type", type}}).status;
  };
  CHECK(with_type("APPLICATION/JSON; charset=utf-8") == 201);
  CHECK(with_type("application/merge-patch+json") == 201);
  CHECK(with_type("application/jsonx") == 415);
  // What an HTML form or a fetch without a preflight can send from another
  // site (issue 28): never taken for JSON, nor a body without any type.
  CHECK(with_type("text/plain") == 415);
  CHECK(with_type("application/x-www-form-urlencoded") == 415);
  CHECK(with_type("multipart/form-data; boundary=x") == 415);
  // (the test client adds a JSON type when none is given: send it raw)
  auto untyped = client::raw_exchange(ep,
                                      "POST /v1/streams/ct/events HTTP/1.1\r\nHost: "
                                      "127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                                      5s);
  CHECK(untyped.rfind("HTTP/1.1 415", 0) == 0);
  CHECK(untyped.find("none was given") != std::string::npos);
  CHECK(client::request(ep, "GET", events_target("ct")).status == 200);  // nothing was stored
  CHECK(json::parse(client::request(ep, "GET", events_target("ct")).body)["events"].size() == 2);
}

TEST_CASE("subscribers cannot make the node hold unbounded streams that do not exist", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--max-unknown-streams", "2"});
  auto ep = node.endpoint();
  auto u1 = std::make_unique<client::sse_stream>(ep, sse_target({"u1"}));
  await_hello(*u1);
  client::sse_stream u2(ep, sse_target({"u2"}));
  await_hello(u2);
  {
    client::sse_stream u3(ep, sse_target({"u3"}));
    INFO(u3.error_body());
    CHECK(u3.status() == 429);
    CHECK(json::parse(u3.error_body())["error"].get<std::string>().find("max-unknown-streams 2") !=
          std::string::npos);
  }

  // Streams that exist are never refused, and creating a waited-on stream
  // frees its place.
  publish(ep, "real", "{}");
  client::sse_stream real(ep, sse_target({"real"}));
  await_hello(real);
  publish(ep, "u2", "{}");
  client::sse_stream created(ep, sse_target({"u3"}));
  await_hello(created);
  created.close();

  // The last session waiting on a name gives its place back when it ends
  // (the node learns of the close asynchronously: await it). Issue 28: a
  // hundred sessions on made-up names once held every place for good.
  u1.reset();
  // A session that closes before its first read registered leaves its hub
  // to the 5 s grace instead: allow for that under load.
  auto open_when_admitted = [&](const std::string& name) -> std::unique_ptr<client::sse_stream> {
    for (auto deadline = std::chrono::steady_clock::now() + 12s;
         std::chrono::steady_clock::now() < deadline;) {
      auto s = std::make_unique<client::sse_stream>(ep, sse_target({name}));
      if (s->status() == 200) return s;
    }
    return nullptr;
  };
  auto admitted = [&](const std::string& name) { return open_when_admitted(name) != nullptr; };
  for (int i = 0; i < 100; ++i) {
    INFO("made-up stream " << i);
    REQUIRE(admitted("made-up-" + std::to_string(i)));
  }
  auto after = open_when_admitted("after");
  REQUIRE(after);
  await_hello(*after);
}

TEST_CASE("history from the not-yet-created cursor starts at the first event, as SSE does", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto first = publish(ep, "h", "{}");
  publish(ep, "h", "{}");
  auto r = client::request(ep, "GET", events_target("h") + "?since=0000000000000000:0");
  REQUIRE(r.status == 200);
  auto events = parse_body(r)["events"];
  REQUIRE(events.size() == 2);
  CHECK(events[0]["cursor"] == first);
}

TEST_CASE("a session catching up on several streams never overflows its own queue", "[hardening]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--queue-frames", "64", "--queue-bytes", "65536"});
  auto ep = node.endpoint();
  const std::string pad(2000, 'x');
  const std::vector<std::string> streams{"c1", "c2", "c3"};
  client::http_connection conn(ep);
  for (auto& s : streams) {
    std::string batch = "[";
    for (int i = 0; i < 100; ++i)
      batch += (i ? "," : "") + event_json("/p", "ADDED", {{"pad", pad}, {"i", i}});
    publish_batch(conn, s, batch + "]");
  }
  // From the beginning of all three: 300 events, about 600 KB, through a
  // 64 KB queue. Pages must be asked for one at a time, each sized to the
  // room that is really free.
  const std::string from_start = "0000000000000000:0,0000000000000000:0,0000000000000000:0";
  client::sse_stream session(ep, sse_target(streams, from_start));
  await_hello(session);
  auto got = collect_data_events(session, 300, 20s);
  INFO("ended: " << to_string(got.ended)
                 << (got.control ? " with " + got.control->event + " " + got.control->data : std::string()));
  REQUIRE(got.events.size() == 300);
  std::map<std::string, int> per_stream;
  for (auto& e : got.events) CHECK(e.data["i"] == per_stream[e.stream]++);
}
