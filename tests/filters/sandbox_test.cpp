// The sandbox (filters/sandbox.hpp) against escape and exhaustion attempts:
// each is refused or stopped with a clear error, the process keeps running,
// and both the same filter (next event) and a new filter still work.

#include "filters/sandbox.hpp"

#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "filter_test_support.hpp"

using namespace tidings::filters;
using namespace tidings::filters::testing;
using json = nlohmann::json;

namespace {

const json attack_event = {{"attack", true}};

// Runs `attack` (on line 1) on one event, then checks the filter and a fresh
// one still work. Returns the attack's error text.
std::string contained(const std::string& attack, filter_limits limits = small_limits()) {
  auto f =
      must_compile("if event.attack then " + attack + " end return 'alive ' .. tostring(event.n)", limits);
  const std::string error = error_of(*f, attack_event);
  CHECK(line_of(*f, {{"n", 2}}) == "alive 2");
  auto second = must_compile("return 'second'", limits);
  CHECK(line_of(*second) == "second");
  return error;
}

std::string not_available(const char* name) {
  return std::string("on_event:1: '") + name +
         "' is not available in the filter sandbox (base, string, table, math and utf8 are)";
}

}  // namespace

TEST_CASE("forbidden libraries and functions are named in the error", "[sandbox]") {
  CHECK(contained(R"(os.execute("true"))") == not_available("os"));
  CHECK(contained(R"(io.open("/etc/passwd"))") == not_available("io"));
  CHECK(contained(R"(require("os"))") == not_available("require"));
  CHECK(contained(R"(load("return 1"))") == not_available("load"));
  CHECK(contained(R"(loadstring("return 1"))") == not_available("loadstring"));
  CHECK(contained(R"(dofile("/etc/passwd"))") == not_available("dofile"));
  CHECK(contained(R"(loadfile("/etc/passwd"))") == not_available("loadfile"));
  CHECK(contained("collectgarbage()") == not_available("collectgarbage"));
  CHECK(contained("debug.getinfo(1)") == not_available("debug"));
  CHECK(contained("local p = package.loaded") == not_available("package"));
  CHECK(contained("coroutine.create(print)") == not_available("coroutine"));
  CHECK(contained("local e = _ENV return e.os") == not_available("os"));
}

TEST_CASE("allowed libraries are there, other missing globals are nil", "[sandbox]") {
  auto f = must_compile(R"(
    return table.concat({type(string.format), type(table.sort), type(math.floor), type(utf8.char),
                         type(pairs), type(pcall), tostring(undefined_name), tostring(rawget(_G, "os")),
                         tostring(warn)}, " "))");
  CHECK(line_of(*f) == "function function function function function function nil nil nil");
}

TEST_CASE("string.dump is refused", "[sandbox]") {
  const std::string expected = "on_event:1: string.dump is not available in the filter sandbox";
  CHECK(contained("string.dump(function() end)") == expected);
  CHECK(contained(R"(("x").dump(print))") == expected);
  CHECK(contained(R"(getmetatable("").__index.dump(print))") == expected);
}

TEST_CASE("bytecode is refused at compile", "[sandbox]") {
  std::string error;
  const std::string bytecode = std::string("\x1bLua\x54\x00\x19\x93\r\n\x1a\n", 12) + std::string(40, '\0');
  CHECK(lua_filter::compile(bytecode, small_limits(), nullptr, &error) == nullptr);
  CHECK(error == "on_event: precompiled Lua bytecode is not accepted; on_event must be Lua source text");
  CHECK(line_of(*must_compile("return 'second'")) == "second");
}

TEST_CASE("an endless loop is stopped by the instruction budget", "[sandbox]") {
  filter_limits limits = small_limits();
  limits.max_instructions = 1'000'000;
  const std::string expected = "on_event: exceeded the per-event budget of 1000000 instructions";
  CHECK(contained("while true do end", limits) == expected);
  SECTION("pcall cannot swallow the budget") {
    CHECK(contained("while true do pcall(function() while true do end end) end", limits) == expected);
    CHECK(contained(
              "while true do xpcall(function() while true do end end, function() while true do end end) end",
              limits) == expected);
  }
  SECTION("nor can a __close handler") {
    CHECK(contained("local c <close> = setmetatable({}, {__close = function() while true do end end}) "
                    "while true do end",
                    limits) == expected);
  }
}

TEST_CASE("an endless loop is stopped by the wall-time budget", "[sandbox]") {
  filter_limits limits = small_limits();
  limits.budget = std::chrono::milliseconds(200);
  limits.max_instructions = std::uint64_t{1} << 62;
  const auto start = std::chrono::steady_clock::now();
  CHECK(contained("while true do end", limits) == "on_event: exceeded the per-event budget of 200 ms");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("memory bombs hit the memory limit", "[sandbox]") {
  const std::string expected = "on_event: exceeded the memory limit of 8 MiB";
  CHECK(contained(R"(local t = {} while true do t[#t + 1] = string.rep("x", 1e6) end)") == expected);
  CHECK(contained(R"(local s = string.rep("x", 1e9))") == expected);
  CHECK(contained(R"(local t = {} for i = 1, 1e9 do t[i] = i end)") == expected);
  CHECK(contained(R"(local s = "x" while true do s = s .. s end)") == expected);
  SECTION("pcall cannot swallow it") {
    CHECK(contained(R"(while true do pcall(string.rep, "x", 1e9) end)") == expected);
  }
  SECTION("printed text counts") {
    CHECK(contained(R"(local s = string.rep("x", 1e5) while true do print(s) end)") == expected);
  }
}

TEST_CASE("deep recursion ends in a clear error", "[sandbox]") {
  const std::string source = "local function f(n) return f(n + 1) + 1 end return f(1)";
  SECTION("under a small memory limit") {
    const std::string error = contained(source);
    CHECK((error == "on_event:1: stack overflow" || error == "on_event: exceeded the memory limit of 8 MiB"));
  }
  SECTION("under the default memory limit") {
    filter_limits limits;
    limits.max_instructions = 50'000'000;
    const std::string error = contained(source, limits);
    CHECK(
        (error == "on_event:1: stack overflow" || error == "on_event: exceeded the memory limit of 64 MiB"));
  }
  SECTION("through metamethods (C stack)") {
    const std::string error =
        contained("local t = setmetatable({}, {__index = function(t, k) return t[k .. 'x'] end}) return t.a");
    CHECK_THAT(error, Catch::Contains("stack overflow") || Catch::Contains("memory limit"));
  }
}

TEST_CASE("the globals' metatable is out of reach", "[sandbox]") {
  CHECK(line_of(*must_compile("return tostring(getmetatable(_G))")) == "false");
  CHECK(contained("setmetatable(_G, {})") == "on_event:1: cannot change a protected metatable");
  CHECK(contained("setmetatable(_G, nil)") == "on_event:1: cannot change a protected metatable");
  CHECK(contained("getmetatable(_G).__index = nil") == "on_event:1: attempt to index a boolean value");
  // The forbidden-name guard still holds after the attempts.
  CHECK(contained("setmetatable(_G, nil) os.exit(1)") == "on_event:1: cannot change a protected metatable");
  CHECK(contained("pcall(setmetatable, _G, nil) os.exit(1)") == not_available("os"));
}

TEST_CASE("__gc metamethods are refused", "[sandbox]") {
  // Lua runs finalizers with hooks off, so one could loop past the budget.
  CHECK(contained("setmetatable({}, {__gc = function() while true do end end})") ==
        "on_event:1: __gc metamethods are not available in the filter sandbox");
  // Adding __gc later does not mark the table for finalization.
  auto f = must_compile(
      "local mt = {} local t = setmetatable({}, mt) mt.__gc = function() while true do end end t = nil "
      "local junk = {} for i = 1, 1e5 do junk[i] = {} end return 'ok'");
  CHECK(line_of(*f) == "ok");
  f.reset();  // closing the state runs no finalizer
}

TEST_CASE("a budget or memory error rebuilds the sandbox, other errors do not", "[sandbox]") {
  filter_limits limits = small_limits();
  limits.max_instructions = 1'000'000;
  auto f = must_compile(R"(
    n = (n or 0) + 1
    if event.loop then while true do end end
    if event.bomb then local s = string.rep("x", 1e9) end
    if event.fail then error("boom") end
    return n)",
                        limits);
  CHECK(line_of(*f) == "1");
  CHECK(line_of(*f) == "2");
  CHECK(error_of(*f, {{"fail", true}}) == "on_event:5: boom");
  CHECK(line_of(*f) == "4");
  CHECK(error_of(*f, {{"loop", true}}) == "on_event: exceeded the per-event budget of 1000000 instructions");
  CHECK(line_of(*f) == "1");
  CHECK(line_of(*f) == "2");
  CHECK(error_of(*f, {{"bomb", true}}) == "on_event: exceeded the memory limit of 8 MiB");
  CHECK(line_of(*f) == "1");
}

TEST_CASE("a memory limit too small for the sandbox fails compile", "[sandbox]") {
  filter_limits limits = small_limits();
  limits.max_memory_bytes = 1000;
  std::string error;
  CHECK(lua_filter::compile("return 1", limits, nullptr, &error) == nullptr);
  CHECK(error == "on_event: exceeded the memory limit of 1000 bytes");
}
