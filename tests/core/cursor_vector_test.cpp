#include "core/cursor_vector.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;

TEST_CASE("one cursor encodes as the plain cursor", "[cursor_vector]") {
  std::vector<cursor> one{{0x9f3a, 7}};
  CHECK(encode_cursor_vector(one) == "0000000000009f3a:7");
  auto back = decode_cursor_vector("0000000000009f3a:7");
  REQUIRE(back);
  CHECK(*back == one);
}

TEST_CASE("several cursors keep their order", "[cursor_vector]") {
  std::vector<cursor> many{{1, 2}, {0, 0}, {~0ull, 99}};
  auto text = encode_cursor_vector(many);
  CHECK(text == "0000000000000001:2,0000000000000000:0,ffffffffffffffff:99");
  auto back = decode_cursor_vector(text);
  REQUIRE(back);
  CHECK(*back == many);
}

TEST_CASE("malformed vectors are refused", "[cursor_vector]") {
  for (const char* text : {"", ",", "1:1,", ",1:1", "1:1,,1:1", "1:1;2:2", "1:1, 2:2", "x", "1:1,abc"}) {
    INFO("input: '" << text << "'");
    CHECK_FALSE(decode_cursor_vector(text));
  }
}

TEST_CASE("an empty span encodes as nothing", "[cursor_vector]") {
  CHECK(encode_cursor_vector({}).empty());
}
