#include "sources/kube/kube_upstream.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/read_extraction.hpp"
#include "sources/kube/kube_connector.hpp"
#include "tests/support/fake_kube_server.hpp"

namespace tidings::sources::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::fake_kube_server;

const std::string cm_path = "/api/v1/namespaces/default/configmaps";
const std::string cm_uri = "kube://test/configmaps?namespace=default";

json cm(const std::string& uid, const std::string& rv, const std::string& value = "") {
  return json{{"kind", "ConfigMap"},
              {"apiVersion", "v1"},
              {"metadata",
               {{"uid", uid},
                {"name", "cm-" + uid},
                {"namespace", "default"},
                {"resourceVersion", rv},
                {"managedFields", json::array({{{"manager", "kubectl"}}})}}},
              {"data", {{"v", value}}}};
}

// Runs the loop until `done` holds; false after 5 s.
bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    ioc.restart();
    ioc.run_one_for(20ms);
  }
  return true;
}

struct fixture {
  fake_kube_server server;
  boost::asio::io_context ioc;
  std::unique_ptr<kube_connector> connector;
  std::unique_ptr<upstream> up;
  int subscribed = 0;
  int updated = 0;
  std::optional<std::string> ended;

  fixture() {
    server.require_token("secret");
    server.set_collection(cm_path, json::array({cm("a", "1", "x"), cm("b", "2")}), "10");
    kube_config config;
    config.context = "test";
    config.server = server.url();
    config.token = "secret";
    config.request_timeout = 3000ms;
    connector = std::make_unique<kube_connector>(ioc, config);
  }

  void open(const std::string& uri = cm_uri) {
    std::string error;
    up = connector->open(uri, &error);
    REQUIRE(up);
  }

  void subscribe() {
    ended.reset();
    upstream::handlers h;
    h.subscribed = [this] { ++subscribed; };
    h.updated = [this] { ++updated; };
    h.ended = [this](std::string reason) { ended = std::move(reason); };
    up->subscribe(std::move(h));
  }

  json read() {
    std::optional<read_outcome> out;
    up->read([&](read_outcome r) { out = std::move(r); });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }));
    REQUIRE(out->result.has_value());
    CHECK(out->result->mime_type == core::event_log_mime_type);
    return json::parse(out->result->text)["events"];
  }

  // Reads until the log holds `n` events (bounded by run_until's deadline).
  json events(std::size_t n) {
    json e = read();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (e.size() < n && std::chrono::steady_clock::now() < deadline) {
      ioc.restart();
      ioc.run_one_for(20ms);
      e = read();
    }
    return e;
  }

  void subscribe_and_wait() {
    const int before = subscribed;
    subscribe();
    REQUIRE(run_until(ioc, [&] { return subscribed > before || ended.has_value(); }));
    INFO(ended.value_or(""));
    REQUIRE(subscribed == before + 1);
  }
};

}  // namespace

TEST_CASE("kube upstream lists, watches and logs events with seq", "[kube]") {
  fixture f;
  f.open();
  f.subscribe_and_wait();
  auto reqs = f.server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].path == cm_path);
  CHECK_FALSE(reqs[0].watch);
  CHECK(reqs[0].authorization == "Bearer secret");
  CHECK(reqs[1].watch);
  CHECK(reqs[1].resource_version == "10");
  CHECK(reqs[1].authorization == "Bearer secret");
  CHECK(f.read().empty());

  f.server.send_watch_event("ADDED", cm("a", "1", "x"));  // what the list gave: suppressed
  f.server.send_watch_event("ADDED", cm("c", "11"));
  f.server.send_watch_event("MODIFIED", cm("a", "12", "y"));
  f.server.send_watch_event("DELETED", cm("b", "13"));
  auto events = f.events(3);
  REQUIRE(events.size() == 3);
  CHECK(events[0]["seq"] == 1);
  CHECK(events[0]["type"] == "ADDED");
  CHECK(events[0]["object"]["metadata"]["uid"] == "c");
  CHECK_FALSE(events[0]["object"]["metadata"].contains("managedFields"));
  CHECK(events[1]["seq"] == 2);
  CHECK(events[1]["type"] == "MODIFIED");
  CHECK(events[1]["object"]["data"]["v"] == "y");
  CHECK(events[1]["old"]["data"]["v"] == "x");
  CHECK(events[1]["old"]["kind"] == "ConfigMap");  // filled in from the list's kind
  CHECK_FALSE(events[1]["old"]["metadata"].contains("managedFields"));
  CHECK(events[2]["seq"] == 3);
  CHECK(events[2]["type"] == "DELETED");
  CHECK_FALSE(events[2].contains("old"));
  CHECK(f.updated >= 1);
  CHECK_FALSE(f.ended.has_value());
}

TEST_CASE("kube upstream joins events split across chunks", "[kube]") {
  fixture f;
  f.open();
  f.subscribe_and_wait();
  const std::string text = json{{"type", "ADDED"}, {"object", cm("s", "20", "split \"}{\" here")}}.dump();
  const std::string first = text.substr(0, text.size() / 2);
  f.server.send_watch_bytes(first);
  REQUIRE(run_until(f.ioc, [&] { return f.server.watch_bytes_written() == first.size(); }));
  f.ioc.restart();
  f.ioc.run_for(50ms);
  CHECK(f.read().empty());
  CHECK(f.updated == 0);
  // The rest in 5-byte chunks, then two whole events in one chunk.
  f.server.send_watch_bytes(text.substr(first.size()) + "\n", 5);
  f.server.send_watch_bytes(json{{"type", "ADDED"}, {"object", cm("t", "21")}}.dump() +
                            json{{"type", "ADDED"}, {"object", cm("u", "22")}}.dump());
  auto events = f.events(3);
  REQUIRE(events.size() == 3);
  CHECK(events[0]["object"]["data"]["v"] == "split \"}{\" here");
  CHECK(events[1]["object"]["metadata"]["uid"] == "t");
  CHECK(events[2]["object"]["metadata"]["uid"] == "u");
}

TEST_CASE("kube upstream ends on a clean stream end and reports the gap on re-list", "[kube]") {
  fixture f;
  f.open();
  f.subscribe_and_wait();
  f.server.send_watch_event("ADDED", cm("c", "11"));
  REQUIRE(f.events(1).size() == 1);
  f.server.end_watch();
  REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));
  CHECK(f.ended->find("ended the watch") != std::string::npos);

  // In the gap: a changed, b deleted, c unchanged, d added.
  f.server.set_collection(cm_path, json::array({cm("a", "30", "z"), cm("c", "11"), cm("d", "31")}), "40");
  const int updates_before = f.updated;
  f.subscribe_and_wait();
  REQUIRE(run_until(f.ioc, [&] { return f.updated > updates_before; }));
  auto events = f.events(4);
  REQUIRE(events.size() == 4);
  CHECK(events[1]["seq"] == 2);
  CHECK(events[1]["type"] == "MODIFIED");
  CHECK(events[1]["object"]["metadata"]["uid"] == "a");
  CHECK(events[1]["old"]["data"]["v"] == "x");
  CHECK(events[2]["seq"] == 3);
  CHECK(events[2]["type"] == "ADDED");
  CHECK(events[2]["object"]["metadata"]["uid"] == "d");
  CHECK(events[3]["seq"] == 4);
  CHECK(events[3]["type"] == "DELETED");
  CHECK(events[3]["object"]["metadata"]["uid"] == "b");
  auto reqs = f.server.requests();
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[3].watch);
  CHECK(reqs[3].resource_version == "40");

  // The re-listed state is the new baseline: the watch replaying d is suppressed.
  f.server.send_watch_event("ADDED", cm("d", "31"));
  f.server.send_watch_event("MODIFIED", cm("d", "32"));
  events = f.events(5);
  REQUIRE(events.size() == 5);
  CHECK(events[4]["type"] == "MODIFIED");
  CHECK(events[4]["seq"] == 5);
}

TEST_CASE("kube upstream lists page by page", "[kube]") {
  fixture f;
  f.server.set_page_size(1);
  f.server.set_collection(cm_path, json::array({cm("a", "1"), cm("b", "2"), cm("c", "3")}), "10");
  f.open();
  f.subscribe_and_wait();
  auto reqs = f.server.requests();
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[0].continue_token.empty());
  CHECK(reqs[0].target.find("limit=500") != std::string::npos);
  CHECK(reqs[1].continue_token == "1");
  CHECK(reqs[2].continue_token == "2");
  CHECK(reqs[3].watch);
  CHECK(reqs[3].resource_version == "10");
  // All three pages seeded the table.
  f.server.send_watch_event("ADDED", cm("c", "3"));
  f.server.send_watch_event("ADDED", cm("d", "4"));
  auto events = f.events(1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["object"]["metadata"]["uid"] == "d");
}

TEST_CASE("kube upstream ends on 410 Gone, in band or as a status", "[kube]") {
  fixture f;
  f.open();
  f.subscribe_and_wait();
  f.server.end_watch();
  REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));

  SECTION("in band") {
    f.server.fail_next_watch_with_gone(true);
    f.subscribe();
    REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));
    CHECK(f.ended->find("watch expired: 410 Expired: too old resource version") != std::string::npos);
    CHECK(f.read().empty());  // the expiry is no ERROR event
  }
  SECTION("as the HTTP status") {
    f.server.fail_next_watch_with_gone(false);
    const int subscribed_before = f.subscribed;
    f.subscribe();
    REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));
    CHECK(f.ended->find("watch failed: 410 Expired: too old resource version") != std::string::npos);
    CHECK(f.subscribed == subscribed_before);
  }
  // And it recovers on the next subscribe.
  f.subscribe_and_wait();
}

TEST_CASE("kube upstream passes other ERROR events to readers", "[kube]") {
  fixture f;
  f.open();
  f.subscribe_and_wait();
  f.server.send_watch_bytes(
      R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"etcd is down"}})");
  auto events = f.events(1);
  REQUIRE(events.size() == 1);
  CHECK(events[0] == json{{"seq", 1}, {"type", "ERROR"}, {"message", "etcd is down"}});
}

TEST_CASE("kube upstream fails subscribe fast with the API server's message", "[kube]") {
  fixture f;
  SECTION("unknown resource") {
    f.open("kube://test/nosuchthings?namespace=default");
    f.subscribe();
    REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));
    CHECK(*f.ended ==
          "kube:test nosuchthings: list failed: 404 NotFound: the server could not find the requested "
          "resource; /api/v1 has no resource 'nosuchthings'");
  }
  SECTION("a typo of a resource the API server has: did you mean") {
    f.open("kube://test/confgimaps?namespace=default");
    f.subscribe();
    REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));
    CHECK(f.ended->ends_with("; /api/v1 has no resource 'confgimaps'; did you mean: configmaps"));
  }
  SECTION("bad token") {
    f.server.require_token("other");
    f.open();
    f.subscribe();
    REQUIRE(run_until(f.ioc, [&] { return f.ended.has_value(); }));
    CHECK(f.ended->find("list failed: 401 Unauthorized") != std::string::npos);
  }
  CHECK(f.subscribed == 0);
  CHECK(f.server.watches_opened() == 0);
}

TEST_CASE("kube upstream close() closes the watch connection", "[kube]") {
  fixture f;
  f.open();
  f.subscribe_and_wait();
  REQUIRE(f.server.watches_open() == 1);
  bool read_done = false;
  f.up->read([&](read_outcome) { read_done = true; });
  f.up->close();
  f.server.send_watch_event("ADDED", cm("late", "50"));
  REQUIRE(run_until(f.ioc, [&] { return f.server.watches_closed_by_client() == 1; }));
  f.ioc.restart();
  f.ioc.run_for(50ms);
  CHECK(f.server.watches_open() == 0);
  CHECK_FALSE(read_done);
  CHECK(f.updated == 0);
  CHECK_FALSE(f.ended.has_value());
  f.up.reset();
}

TEST_CASE("kube connector lists templates, canonicalises and reads state", "[kube]") {
  fixture f;
  auto res = f.connector->resources();
  REQUIRE(res.size() == 1);
  CHECK(res[0].uri == "kube://test/{resource}{?namespace,labelSelector,fieldSelector}");
  CHECK(res[0].template_);
  CHECK(res[0].subscribable);
  CHECK(res[0].server == "kube:test");
  CHECK(res[0].example == "watch uri=kube://test/configmaps?namespace=default");
  CHECK(f.connector->name() == "kube:test");
  CHECK(f.connector->canonical("kube://test/configmaps?labelSelector=a%3Db&namespace=default") ==
        "kube://test/configmaps?namespace=default&labelSelector=a=b");

  std::string error;
  CHECK_FALSE(f.connector->open("kube://other/configmaps", &error));
  CHECK(error.find("serves context test") != std::string::npos);

  std::optional<read_outcome> out;
  f.connector->read(cm_uri, [&](read_outcome r) { out = std::move(r); });
  REQUIRE(run_until(f.ioc, [&] { return out.has_value(); }));
  REQUIRE(out->result.has_value());
  CHECK(out->result->mime_type == "application/json");
  auto items = json::parse(out->result->text);
  REQUIRE(items.size() == 2);
  CHECK(items[0]["metadata"]["uid"] == "a");
  CHECK_FALSE(items[0]["metadata"].contains("managedFields"));

  out.reset();
  f.connector->read("kube://test/nosuchthings", [&](read_outcome r) { out = std::move(r); });
  REQUIRE(run_until(f.ioc, [&] { return out.has_value(); }));
  CHECK(out->error.find("404 NotFound") != std::string::npos);

  std::optional<std::string> started;
  f.connector->start([&](std::string e) { started = std::move(e); });
  REQUIRE(run_until(f.ioc, [&] { return started.has_value(); }));
  CHECK(started->empty());
}

}  // namespace tidings::sources::kube
