// read_resource and list_resources, the filter's only way out of the sandbox.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "filter_test_support.hpp"

using namespace tidings::filters;
using namespace tidings::filters::testing;
using json = nlohmann::json;

namespace {

class fake_reader final : public resource_reader {
 public:
  read_result read_resource(const std::string& uri) override {
    reads.push_back(uri);
    if (uri == "throw://") throw std::runtime_error("reader blew up");
    auto it = resources.find(uri);
    if (it == resources.end()) return {nullptr, "resource not found: " + uri};
    return {it->second, ""};
  }
  json list_resources() override {
    ++lists;
    json out = json::array();
    for (const auto& [uri, value] : resources)
      out.push_back({{"uri", uri}, {"name", uri}, {"subscribable", true}});
    return out;
  }

  std::map<std::string, json> resources = {
      {"mem://config", {{"threshold", 3}, {"names", {"a", "b"}}, {"none", nullptr}}},
      {"mem://text", "plain text"},
  };
  std::vector<std::string> reads;
  int lists = 0;
};

}  // namespace

TEST_CASE("read_resource returns the value as Lua", "[builtins]") {
  fake_reader reader;
  auto f = must_compile(R"(
    local cfg = read_resource("mem://config")
    return {t = cfg.threshold, second = cfg.names[2], none = cfg.none == nil, text = read_resource("mem://text")})",
                        small_limits(), &reader);
  CHECK(line_of(*f) == R"({"none":true,"second":"b","t":3,"text":"plain text"})");
  CHECK(reader.reads == std::vector<std::string>{"mem://config", "mem://text"});
}

TEST_CASE("list_resources returns the list", "[builtins]") {
  fake_reader reader;
  auto f = must_compile(R"(
    local uris = {}
    for _, r in ipairs(list_resources()) do uris[#uris + 1] = r.uri end
    return uris)",
                        small_limits(), &reader);
  CHECK(line_of(*f) == R"(["mem://config","mem://text"])");
  CHECK(reader.lists == 1);
}

TEST_CASE("read errors become the filter's error", "[builtins]") {
  fake_reader reader;
  auto f = must_compile(R"(return read_resource(event.uri))", small_limits(), &reader);
  CHECK(error_of(*f, {{"uri", "mem://missing"}}) ==
        "on_event:1: read_resource: resource not found: mem://missing");
  CHECK(error_of(*f, {{"uri", "throw://"}}) == "on_event:1: read_resource: reader blew up");
  CHECK(error_of(*f, json::object()) ==
        "on_event:1: bad argument #1 to 'read_resource' (string expected, got nil)");
  CHECK(line_of(*f, {{"uri", "mem://text"}}) == "plain text");
  // A read error is the filter's to catch.
  auto g = must_compile(R"(local ok, err = pcall(read_resource, "mem://nope") return err)", small_limits(),
                        &reader);
  CHECK(line_of(*g) == "read_resource: resource not found: mem://nope");
}

TEST_CASE("at most max_builtin_calls calls per event", "[builtins]") {
  fake_reader reader;
  auto f = must_compile(R"(
    for i = 1, event.reads do read_resource("mem://text") end
    for i = 1, event.lists do list_resources() end
    return "done")",
                        small_limits(), &reader);
  CHECK(line_of(*f, {{"reads", 6}, {"lists", 4}}) == "done");
  CHECK(line_of(*f, {{"reads", 10}, {"lists", 0}}) == "done");  // the count is per event
  CHECK(error_of(*f, {{"reads", 6}, {"lists", 5}}) ==
        "on_event: more than 10 read_resource/list_resources calls in one event");
  CHECK(error_of(*f, {{"reads", 11}, {"lists", 0}}) ==
        "on_event: more than 10 read_resource/list_resources calls in one event");
  CHECK(reader.reads.size() == 6 + 10 + 6 + 10);
  CHECK(line_of(*f, {{"reads", 1}, {"lists", 1}}) == "done");
}

TEST_CASE("without a reader the built-ins say so", "[builtins]") {
  auto f = must_compile(R"(if event.list then return list_resources() end return read_resource("x"))");
  CHECK(error_of(*f) == "on_event:1: no resources are available to this filter");
  CHECK(error_of(*f, {{"list", true}}) == "on_event:1: no resources are available to this filter");
}

TEST_CASE("nothing else leaves the sandbox", "[builtins]") {
  auto f = must_compile(
      "return tostring(watch_start) .. tostring(watch_stop) .. tostring(write_resource) .. "
      "tostring(call_tool)");
  CHECK(line_of(*f) == "nilnilnilnil");
}
