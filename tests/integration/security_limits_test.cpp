// Per-tenant limits: each answers 429 (409 for watches, 413 for bodies)
// naming the limit, while every other request is still served.

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tenant_node.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

}  // namespace

TEST_CASE("each tenant limit refuses past it and the node keeps serving", "[security]") {
  tenant_node node(
      "    limits: {sse_sessions: 3, sse_sessions_per_subject: 2, streams_per_session: 2, watches: 1,\n"
      "             publish_rate: 5, publish_burst: 5, max_body_bytes: 2000, unknown_streams: 2,\n"
      "             streams: 3}\n");
  auto ep = node.endpoint();
  auto ann = node.token(token_spec().sub("ann"));
  auto bob = node.token(token_spec().sub("bob"));
  auto globex = node.token(token_spec().tenant("globex").sub("gus"));
  auto healthy = [&] {
    CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(globex)).status == 200);
    CHECK(client::request(ep, "GET", "/v1/streams", {}, bearer(bob)).status == 200);
  };

  SECTION("sessions per subject and per tenant") {
    std::vector<std::unique_ptr<client::sse_stream>> open;
    for (int i = 0; i < 2; ++i) {
      open.push_back(std::make_unique<client::sse_stream>(ep, "/v1/sse?stream=docs", bearer(ann)));
      await_hello(*open.back());
    }
    client::sse_stream third(ep, "/v1/sse?stream=docs", bearer(ann));
    CHECK(third.status() == 429);
    CHECK(third.error_body().find("subject (limit 2)") != std::string::npos);
    open.push_back(std::make_unique<client::sse_stream>(ep, "/v1/sse?stream=docs", bearer(bob)));
    await_hello(*open.back());
    client::sse_stream fourth(ep, "/v1/sse?stream=docs", bearer(bob));
    CHECK(fourth.status() == 429);
    CHECK(fourth.error_body().find("tenant (limit 3)") != std::string::npos);
    client::sse_stream other_tenant(ep, "/v1/sse?stream=docs", bearer(globex));
    await_hello(other_tenant);
    healthy();
    // A closed session gives its slot back once the node has seen the
    // close, which it learns asynchronously: retry until a deadline.
    open.front()->close();
    open.erase(open.begin());
    bool admitted = false;
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         !admitted && std::chrono::steady_clock::now() < deadline;) {
      client::sse_stream again(ep, "/v1/sse?stream=docs", bearer(ann));
      admitted = again.status() == 200;
    }
    CHECK(admitted);
  }
  SECTION("streams that do not exist yet, per tenant") {
    // Each tenant has its own places: one using all of its own cannot
    // keep another's sessions from new streams.
    std::vector<std::unique_ptr<client::sse_stream>> waiting;
    for (int i = 0; i < 2; ++i) {
      waiting.push_back(
          std::make_unique<client::sse_stream>(ep, "/v1/sse?stream=new-" + std::to_string(i), bearer(ann)));
      await_hello(*waiting.back());
    }
    client::sse_stream over(ep, "/v1/sse?stream=new-2", bearer(bob));
    CHECK(over.status() == 429);
    CHECK(over.error_body().find("tenant 'acme' (limits.unknown_streams 2)") != std::string::npos);
    client::sse_stream other(ep, "/v1/sse?stream=new-2", bearer(globex));
    await_hello(other);
    // A stream that exists is never refused.
    CHECK(post_json(ep, ann, "/v1/streams/docs/events", R"({"path":"/x"})").status == 201);
    client::sse_stream existing(ep, "/v1/sse?stream=docs", bearer(bob));
    await_hello(existing);
    healthy();
  }
  SECTION("streams per tenant") {
    for (auto name : {"s1", "s2", "s3"})
      CHECK(post_json(ep, ann, std::string("/v1/streams/") + name + "/events", R"({"path":"/x"})").status ==
            201);
    auto fourth = post_json(ep, ann, "/v1/streams/s4/events", R"({"path":"/x"})");
    CHECK(fourth.status == 429);
    CHECK(error_of(fourth).find("3 streams on this node (limits.streams)") != std::string::npos);
    CHECK(post_json(ep, bob, "/v1/streams/s1/events", R"({"path":"/x"})").status == 201);  // existing: fine
    CHECK(post_json(ep, globex, "/v1/streams/s4/events", R"({"path":"/x"})").status ==
          201);  // another tenant
    CHECK(client::request(ep, "GET", "/v1/streams/s4/events", {}, bearer(ann)).status == 404);  // not created
  }
  SECTION("streams per session") {
    client::sse_stream three(ep, "/v1/sse?stream=a&stream=b&stream=c", bearer(ann));
    CHECK(three.status() == 429);
    CHECK(three.error_body().find("limit 2") != std::string::npos);
    healthy();
  }
  SECTION("publish rate") {
    auto five = json::array();
    for (int i = 0; i < 5; ++i) five.push_back({{"path", "/x"}, {"data", i}});
    CHECK(post_json(ep, ann, "/v1/streams/docs/events", five.dump()).status == 201);
    auto over = post_json(ep, ann, "/v1/streams/docs/events", R"({"path":"/x"})");
    CHECK(over.status == 429);
    CHECK(error_of(over).find("5 events/s") != std::string::npos);
    CHECK(!over.headers["retry-after"].empty());
    CHECK(post_json(ep, globex, "/v1/streams/docs/events", R"({"path":"/x"})").status == 201);
    healthy();
  }
  SECTION("watches per tenant") {
    auto w1 = post_json(ep, ann, "/v1/watches", R"({"name":"w1","uri":"stream://docs"})");
    CHECK(w1.status == 201);
    auto w2 = post_json(ep, ann, "/v1/watches", R"({"name":"w2","uri":"stream://docs"})");
    CHECK(w2.status == 409);
    CHECK(error_of(w2).find("watch limit 1") != std::string::npos);
    CHECK(post_json(ep, globex, "/v1/watches", R"({"name":"w2","uri":"stream://docs"})").status == 201);
    healthy();
  }
  SECTION("request body size") {
    std::string big = R"({"path":"/x","data":")" + std::string(3000, 'x') + "\"}";
    auto r = post_json(ep, ann, "/v1/streams/docs/events", big);
    CHECK(r.status == 413);
    CHECK(error_of(r).find("2000 bytes") != std::string::npos);
    CHECK(post_json(ep, globex, "/v1/streams/docs/events", big).status == 201);
    healthy();
  }
}
