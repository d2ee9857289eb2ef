#include "core/cursor.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;

TEST_CASE("format_epoch is always 16 lowercase hex digits", "[cursor]") {
  CHECK(format_epoch(0) == "0000000000000000");
  CHECK(format_epoch(0x9f3a) == "0000000000009f3a");
  CHECK(format_epoch(0xFFFFFFFFFFFFFFFFull) == "ffffffffffffffff");
  CHECK(format_epoch(0x0123456789ABCDEFull) == "0123456789abcdef");
}

TEST_CASE("parse_epoch takes exactly 16 lowercase hex digits", "[cursor]") {
  CHECK(parse_epoch("0000000000000000") == 0u);
  CHECK(parse_epoch("000000000000000a") == 10u);
  CHECK(parse_epoch("ffffffffffffffff") == 0xFFFFFFFFFFFFFFFFull);
  CHECK(parse_epoch("00000000deadbeef") == 0xdeadbeefu);
  CHECK_FALSE(parse_epoch("00000000DeadBeef"));  // one spelling per epoch
  CHECK_FALSE(parse_epoch("0"));
  CHECK_FALSE(parse_epoch("deadbeef"));
  CHECK_FALSE(parse_epoch(""));
  CHECK_FALSE(parse_epoch("10000000000000000"));  // 17 digits
  CHECK_FALSE(parse_epoch("g"));
  CHECK_FALSE(parse_epoch("0x1"));
  CHECK_FALSE(parse_epoch(" 1"));
  CHECK_FALSE(parse_epoch("-1"));
}

TEST_CASE("format_cursor and parse_cursor round trip", "[cursor]") {
  for (cursor c : {cursor{0, 0}, cursor{1, 1}, cursor{0x9f3a, 1042}, cursor{~0ull, ~0ull}}) {
    auto text = format_cursor(c);
    auto back = parse_cursor(text);
    REQUIRE(back);
    CHECK(*back == c);
  }
  CHECK(format_cursor({0x9f3a, 1042}) == "0000000000009f3a:1042");
  CHECK(format_cursor({0, 0}) == "0000000000000000:0");
}

TEST_CASE("parse_cursor takes the printed form only", "[cursor]") {
  CHECK(parse_cursor("0000000000000001:1") == cursor{1, 1});
  CHECK(parse_cursor("00000000000000ab:0") == cursor{0xab, 0});
  CHECK(parse_cursor("0000000000000001:18446744073709551615") == cursor{1, 18446744073709551615ull});
  CHECK_FALSE(parse_cursor("1:1"));                  // short epoch
  CHECK_FALSE(parse_cursor("00000000000000AB:0"));   // uppercase
  CHECK_FALSE(parse_cursor("0000000000000001:07"));  // leading zero
  CHECK_FALSE(parse_cursor("0000000000000001:00"));
}

TEST_CASE("parse_cursor is strict", "[cursor]") {
  const char* bad[] = {
      "",
      ":",
      "abc:",
      ":5",
      "g:1",
      "10000000000000000:1",
      "+1:1",
      "1:+1",
      " 1:1",
      "1:1 ",
      "1 :1",
      "1: 1",
      "1:-1",
      "-1:1",
      "1",
      "1:",
      "1:1:1",
      "1::1",
      "1:18446744073709551616",
      "1:99999999999999999999",
      "1:000000000000000000001",
      "1:1a",
      "1:0x1",
      "1,1",
      "1:1\n",
  };
  for (const char* text : bad) {
    INFO("input: '" << text << "'");
    CHECK_FALSE(parse_cursor(text));
  }
  CHECK_FALSE(parse_cursor(std::string_view("1:1\0", 4)));
}

TEST_CASE("cursors order by epoch then seq", "[cursor]") {
  CHECK(cursor{1, 5} < cursor{1, 6});
  CHECK(cursor{1, 9} < cursor{2, 0});
  CHECK(cursor{3, 3} == cursor{3, 3});
}
