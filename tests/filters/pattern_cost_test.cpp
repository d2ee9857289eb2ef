#include <catch2/catch.hpp>

#include <string>

#include "filters/lua_filter.hpp"
#include "filters/pattern_cost.hpp"

using namespace tidings::filters;

TEST_CASE("the worst case grows with each repeat and with unanchored starts", "[pattern_cost]") {
  CHECK(pattern_worst_case("abc", 99) == Approx(100.0));          // one pass per start
  CHECK(pattern_worst_case("^abc", 99) == Approx(1.0));           // anchored: one start
  CHECK(pattern_worst_case("^(%w+)/(%w+)$", 99) == Approx(1e4));  // two repeats
  CHECK(pattern_worst_case("a-b", 999) == Approx(1e6));           // one repeat, every start
  CHECK(pattern_worst_case("^[%]*]+x", 9) == Approx(10.0));       // a set holding ']' and '*'
  CHECK(pattern_worst_case("^%*%+%-", 9) == Approx(1.0));         // escaped, not repeats
  CHECK(pattern_worst_case("^%b()", 9) == Approx(10.0));          // %b scans the subject
  CHECK(pattern_worst_case("^a?b?", 9) == Approx(4.0));           // optionals double
  CHECK(pattern_worst_case(std::string("a-", 2) + "a-a-a-a-a-a-a-a-a-a-a-b", 2000) > 1e30);
}

TEST_CASE("costly calls are refused, ordinary ones pass", "[pattern_cost]") {
  CHECK_FALSE(check_pattern_cost("gsub", "%s+", 10000));  // 10^8
  CHECK_FALSE(check_pattern_cost("match", "^(%w+)/(%w+)/(%w+)$", 500));
  auto refused = check_pattern_cost("find", "a-a-a-b", 2000);
  REQUIRE(refused);
  CHECK(refused->find("string.find: the pattern 'a-a-a-b' on 2000 bytes") == 0);
}

TEST_CASE("the sandbox stops a backtracking pattern at once, with a clear error", "[pattern_cost]") {
  std::string error;
  auto filter = lua_filter::compile(
      "local s = string.rep('a', 2000)\n"
      "if event.kind == 'bad' then return s:find(string.rep('a-', 12) .. 'b') end\n"
      "if event.kind == 'plain' then return s:find('a-a-b', 1, true) and 'found' or 'none' end\n"
      "return (string.gsub('a  b   c', '%s+', ' '))",
      {}, nullptr, &error);
  REQUIRE(filter);
  auto bad = filter->run({{"kind", "bad"}});
  CHECK(bad.what == filter_result::outcome::error);
  CHECK(bad.text.find("on_event:2: string.find: the pattern") == 0);
  CHECK(bad.text.find("10^9") != std::string::npos);

  auto plain = filter->run({{"kind", "plain"}});
  CHECK(plain.what == filter_result::outcome::keep);
  CHECK(plain.text == "none");
  auto fine = filter->run({{"kind", "ok"}});
  CHECK(fine.text == "a b c");
}
