// JSON <-> Lua conversion (filters/lua_json.hpp), seen through lua_filter:
// the event goes in as Lua values, the returned value comes out as JSON.

#include "filters/lua_json.hpp"

#include <string>

#include <catch2/catch.hpp>

#include "filter_test_support.hpp"

using namespace tidings::filters;
using namespace tidings::filters::testing;
using json = nlohmann::json;

namespace {
std::string returned(const char* expression) {
  auto f = must_compile(std::string("return ") + expression);
  return line_of(*f);
}
std::string refused(const char* expression) {
  auto f = must_compile(std::string("return ") + expression);
  return error_of(*f);
}
}  // namespace

TEST_CASE("an empty table is an object", "[lua_json]") {
  CHECK(returned("{}") == "{}");
  CHECK(returned("{a = {}, b = {{}}}") == R"({"a":{},"b":[{}]})");
}

TEST_CASE("a table keyed exactly 1..n is an array", "[lua_json]") {
  CHECK(returned("{10, 20, 30}") == "[10,20,30]");
  CHECK(returned("{[3] = 'c', [1] = 'a', [2] = 'b'}") == R"(["a","b","c"])");
  CHECK(returned("{[1.0] = 'float key normalised'}") == R"(["float key normalised"])");
}

TEST_CASE("any other table is an object with string keys", "[lua_json]") {
  CHECK(returned("{1, 2, x = 3}") == R"({"1":1,"2":2,"x":3})");         // mixed keys
  CHECK(returned("{[2] = 'b', [3] = 'c'}") == R"({"2":"b","3":"c"})");  // not from 1
  CHECK(returned("{[1] = 'a', [3] = 'c'}") == R"({"1":"a","3":"c"})");  // a hole
  CHECK(returned("{[0] = 'z', [1] = 'a'}") == R"({"0":"z","1":"a"})");
  CHECK(returned("{[-1] = 'n'}") == R"({"-1":"n"})");
  CHECK(returned("{[1.5] = 'f'}") == R"({"1.5":"f"})");
}

TEST_CASE("tables nest", "[lua_json]") {
  CHECK(returned("{a = {b = {c = {1, {d = 'e'}}}}}") == R"({"a":{"b":{"c":[1,{"d":"e"}]}}})");
}

TEST_CASE("a table reached twice without a cycle is fine", "[lua_json]") {
  auto f = must_compile("local shared = {1} return {a = shared, b = shared}");
  CHECK(line_of(*f) == R"({"a":[1],"b":[1]})");
}

TEST_CASE("strings are escaped, invalid UTF-8 replaced", "[lua_json]") {
  CHECK(returned(R"({s = 'a"b\n\t'})") == R"({"s":"a\"b\n\t"})");
  CHECK(returned(R"({s = '\xff'})") == "{\"s\":\"\xef\xbf\xbd\"}");
}

TEST_CASE("metamethods are ignored when encoding", "[lua_json]") {
  auto f = must_compile(
      "return setmetatable({a = 1}, {__index = function() return 'x' end, __pairs = function() error('no') "
      "end})");
  CHECK(line_of(*f) == R"({"a":1})");
}

TEST_CASE("values JSON cannot hold are errors, not null", "[lua_json]") {
  // Decision: nan and inf are refused rather than written as null, so a
  // filter bug shows up as its error text instead of a silently odd line.
  CHECK(refused("0/0") == "on_event: cannot encode nan as JSON");
  CHECK(refused("{x = math.huge}") == "on_event: cannot encode inf as JSON");
  CHECK(refused("{-math.huge}") == "on_event: cannot encode -inf as JSON");
  CHECK(refused("{f = print}") == "on_event: cannot encode a function as JSON");
  CHECK(refused("print") == "on_event: cannot encode a function as JSON");
  CHECK(refused("{[true] = 1}") == "on_event: cannot encode a table key of type boolean as JSON");
  CHECK(refused("{[{}] = 1}") == "on_event: cannot encode a table key of type table as JSON");
}

TEST_CASE("cycles and deep nesting are errors", "[lua_json]") {
  auto cycle = must_compile("local t = {} t.self = t return t");
  CHECK(error_of(*cycle) == "on_event: cannot encode a table that contains itself as JSON");
  auto deep_ok = must_compile("local t = {} for i = 1, 99 do t = {t} end return t");  // 100 levels
  CHECK(line_of(*deep_ok) == std::string(99, '[') + "{}" + std::string(99, ']'));
  auto too_deep = must_compile("local t = {} for i = 1, 100 do t = {t} end return t");  // 101 levels
  CHECK(error_of(*too_deep) == "on_event: cannot encode a table nested deeper than 100 levels as JSON");
  // Still usable afterwards.
  CHECK(error_of(*cycle) == "on_event: cannot encode a table that contains itself as JSON");
}

TEST_CASE("an event nested too deeply is refused", "[lua_json]") {
  json deep = json::array();
  for (int i = 0; i < max_json_depth + 5; ++i) deep = json::array({deep});
  auto f = must_compile("return 'unreachable'");
  CHECK(error_of(*f, {{"x", deep}}) == "on_event: JSON nests deeper than 100 levels");
  CHECK(line_of(*f) == "unreachable");
}

TEST_CASE("a value that would be huge as JSON is refused, however cheap in Lua", "[lua_json]") {
  std::string error;
  auto filter = tidings::filters::lua_filter::compile(
      "local s = string.rep('x', 1 << 16) local t = {} for i = 1, 1000 do t[i] = s end return t", {}, nullptr,
      &error);
  REQUIRE(filter);
  auto r = filter->run(nlohmann::json::object());
  CHECK(r.what == tidings::filters::filter_result::outcome::error);
  CHECK(r.text.find("larger than 1024 KiB as JSON") != std::string::npos);
  // Shared references nested: 2^40 leaves in a few tables.
  r = filter->run(nlohmann::json::object());
  auto nested = tidings::filters::lua_filter::compile(
      "local t = {'x'} for i = 1, 40 do t = {t, t} end return t", {}, nullptr, &error);
  REQUIRE(nested);
  r = nested->run(nlohmann::json::object());
  CHECK(r.what == tidings::filters::filter_result::outcome::error);
  CHECK(r.text.find("larger than") != std::string::npos);
}
