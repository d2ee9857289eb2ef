#include "filters/lua_filter.hpp"

#include <string>

#include <catch2/catch.hpp>

#include "filter_test_support.hpp"

using namespace tidings::filters;
using namespace tidings::filters::testing;
using json = nlohmann::json;

TEST_CASE("a returned string is the line as is", "[lua_filter]") {
  auto f = must_compile(R"(return "ADDED " .. event.name)");
  CHECK(line_of(*f, {{"name", "cm-1"}}) == "ADDED cm-1");
}

TEST_CASE("a returned table is compact JSON", "[lua_filter]") {
  auto f = must_compile(R"(return {kind = event.type, n = 2, tags = {"a", "b"}, ok = true})");
  CHECK(line_of(*f, {{"type", "ADDED"}}) == R"({"kind":"ADDED","n":2,"ok":true,"tags":["a","b"]})");
}

TEST_CASE("returning nil or nothing drops the event", "[lua_filter]") {
  for (const char* source :
       {"return nil", "", "local x = 1", "if event.type ~= 'ADDED' then return end return 'x'"}) {
    INFO(source);
    auto f = must_compile(source);
    const filter_result r = f->run({{"type", "DELETED"}});
    CHECK(r.what == filter_result::outcome::drop);
    CHECK(r.text.empty());
  }
}

TEST_CASE("numbers and booleans are compact JSON", "[lua_filter]") {
  CHECK(line_of(*must_compile("return 42")) == "42");
  CHECK(line_of(*must_compile("return -7 // 2")) == "-4");
  CHECK(line_of(*must_compile("return 1.5")) == "1.5");
  CHECK(line_of(*must_compile("return 3 / 2")) == "1.5");
  CHECK(line_of(*must_compile("return true")) == "true");
  CHECK(line_of(*must_compile("return false")) == "false");
}

TEST_CASE("only the first returned value counts", "[lua_filter]") {
  CHECK(line_of(*must_compile("return 'a', 'b'")) == "a");
}

TEST_CASE("print is captured, not written to stdout", "[lua_filter]") {
  SECTION("printed text is the line when nothing is returned") {
    auto f = must_compile(R"(print("a", 1, true, nil) print("second"))");
    CHECK(line_of(*f) == "a\t1\ttrue\tnil\nsecond");
  }
  SECTION("a returned value wins over printed text") {
    auto f = must_compile(R"(print("noise") return "line")");
    CHECK(line_of(*f) == "line");
  }
  SECTION("the buffer is per run") {
    auto f = must_compile(R"(if event.say then print(event.say) end)");
    CHECK(line_of(*f, {{"say", "one"}}) == "one");
    CHECK(f->run(json::object()).what == filter_result::outcome::drop);
    CHECK(line_of(*f, {{"say", "two"}}) == "two");
  }
  SECTION("print honours __tostring") {
    auto f = must_compile(R"(print(setmetatable({}, {__tostring = function() return "T" end})))");
    CHECK(line_of(*f) == "T");
  }
}

TEST_CASE("globals persist between runs, event is fresh each run", "[lua_filter]") {
  auto f = must_compile(R"(
    count = (count or 0) + 1
    seen = seen or {}
    seen[#seen + 1] = event.name
    return count .. " " .. table.concat(seen, ",") .. " " .. tostring(event.extra))");
  CHECK(line_of(*f, {{"name", "a"}, {"extra", 1}}) == "1 a 1");
  CHECK(line_of(*f, {{"name", "b"}}) == "2 a,b nil");
  CHECK(line_of(*f, {{"name", "c"}}) == "3 a,b,c nil");
}

TEST_CASE("event fields arrive as Lua values", "[lua_filter]") {
  const json event = json::parse(R"({
    "type": "MODIFIED", "seq": 7, "ratio": 0.25, "big": 18446744073709551615, "neg": -3,
    "flag": false, "gone": null,
    "object": {"metadata": {"name": "cm", "labels": {"app": "web"}}},
    "changed": ["status.phase", "spec.replicas"],
    "grid": [[1, 2], [3, [4, 5]]],
    "holes": [1, null, 3]
  })");
  auto f = must_compile(R"(
    local parts = {
      event.type, math.type(event.seq), math.type(event.ratio), math.type(event.big), event.neg,
      tostring(event.flag), tostring(event.gone),
      event.object.metadata.name, event.object.metadata.labels.app,
      #event.changed, event.changed[1], event.changed[2],
      event.grid[2][2][2], tostring(event.holes[2]), event.holes[3],
    }
    for i, v in ipairs(parts) do parts[i] = tostring(v) end
    return table.concat(parts, "|"))");
  CHECK(line_of(*f, event) ==
        "MODIFIED|integer|float|float|-3|false|nil|cm|web|2|status.phase|spec.replicas|5|nil|3");
}

TEST_CASE("a JSON null event is nil", "[lua_filter]") {
  auto f = must_compile("return tostring(event)");
  CHECK(line_of(*f, nullptr) == "nil");
}

TEST_CASE("syntax errors fail compile with the line", "[lua_filter]") {
  std::string error;
  CHECK(lua_filter::compile("local x = 1\nreturn x +* 2", {}, nullptr, &error) == nullptr);
  CHECK(error == "on_event:2: unexpected symbol near '*'");
  CHECK(lua_filter::compile("return (", {}, nullptr, &error) == nullptr);
  CHECK(error == "on_event:1: unexpected symbol near <eof>");
  CHECK(lua_filter::compile("x = ", {}, nullptr, nullptr) == nullptr);  // error may be null
}

TEST_CASE("runtime errors carry the chunk name and line", "[lua_filter]") {
  auto f = must_compile("local a = 1\nlocal b = 2\nreturn fmt(a, b)");
  CHECK(error_of(*f) == "on_event:3: attempt to call a nil value (global 'fmt')");
  // An ordinary error does not reset the filter's globals.
  auto g = must_compile("n = (n or 0) + 1 if event.fail then error('boom') end return n");
  CHECK(line_of(*g) == "1");
  CHECK(error_of(*g, {{"fail", true}}) == "on_event:1: boom");
  CHECK(line_of(*g) == "3");
  CHECK(error_of(*must_compile("error({})")) == "on_event: error object is a table value");
  CHECK(error_of(*must_compile("error(42)")) == "42");
}

TEST_CASE("dry run forgives missing keys only", "[lua_filter][dry_run]") {
  const json sample = {{"type", "ADDED"}, {"key", "k"}};
  const auto dry = [&](const char* source) {
    auto f = must_compile(source);
    return f->dry_run(sample);
  };
  SECTION("missing keys are fine") {
    for (const char* source : {
             "return event.object.metadata.name",                          // index field
             "local m = event.meta return m.name",                         // index local
             "local m = event.meta return (function() return m.x end)()",  // index upvalue
             "return 'x' .. event.x",                                      // concatenate field
             "return event.count + 1",                                     // arithmetic field
             "return event.count > 1",                                     // compare nil with number
             "return #event.changed",                                      // length
             "for _, c in ipairs(event.changed) do end",                   // inside ipairs
             "for _, c in pairs(event.changed) do end",                    // library check
             "return ('x'):rep(event.n)",                                  // library check
             "return event.type",                                          // no error at all
         }) {
      INFO(source);
      const auto error = dry(source);
      CHECK_FALSE(error);
      if (error) FAIL(*error);
    }
  }
  SECTION("an undefined global fails") {
    CHECK(dry("return fmt(event)") ==
          std::optional<std::string>("on_event:1: attempt to call a nil value (global 'fmt')"));
    CHECK(dry("return cfg.x") ==
          std::optional<std::string>("on_event:1: attempt to index a nil value (global 'cfg')"));
    CHECK(dry("total = total + 1") ==
          std::optional<std::string>(
              "on_event:1: attempt to perform arithmetic on a nil value (global 'total')"));
  }
  SECTION("calling a missing method fails") {
    CHECK(dry("return event.type:lowr()") ==
          std::optional<std::string>("on_event:1: attempt to call a nil value (method 'lowr')"));
  }
  SECTION("the filter's own errors fail") {
    CHECK(dry("error('x')") == std::optional<std::string>("on_event:1: x"));
  }
  SECTION("sandbox errors fail") {
    CHECK(dry("return os.time()") ==
          std::optional<std::string>("on_event:1: 'os' is not available in the filter sandbox (base, string, "
                                     "table, math and utf8 are)"));
  }
  SECTION("the budget fails") {
    filter_limits limits = small_limits();
    limits.max_instructions = 100'000;
    auto f = must_compile("while true do end", limits);
    CHECK(f->dry_run(sample) ==
          std::optional<std::string>("on_event: exceeded the per-event budget of 100000 instructions"));
  }
}

TEST_CASE("dry run leaves the filter's globals alone", "[lua_filter][dry_run]") {
  auto f = must_compile("n = (n or 0) + 1 return n");
  CHECK(line_of(*f) == "1");
  CHECK_FALSE(f->dry_run(json::object()));
  CHECK_FALSE(f->dry_run(json::object()));
  CHECK(line_of(*f) == "2");
}
