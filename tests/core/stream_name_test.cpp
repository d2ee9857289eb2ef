#include "core/stream_name.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;

TEST_CASE("valid stream names", "[stream_name]") {
  CHECK(valid_stream_name("docs"));
  CHECK(valid_stream_name("0"));
  CHECK(valid_stream_name("a.b_c-d9"));
  CHECK(valid_stream_name(std::string(128, 'a')));
  CHECK_FALSE(valid_stream_name(std::string(129, 'a')));
  CHECK_FALSE(valid_stream_name(""));
  CHECK_FALSE(valid_stream_name("Docs"));
  CHECK_FALSE(valid_stream_name(".docs"));
  CHECK_FALSE(valid_stream_name("-docs"));
  CHECK_FALSE(valid_stream_name("_docs"));
  CHECK_FALSE(valid_stream_name("do cs"));
  CHECK_FALSE(valid_stream_name("docs/"));
  CHECK_FALSE(valid_stream_name("watch:x"));
  CHECK_FALSE(valid_stream_name("d\xc3\xa9"));
}

TEST_CASE("a selector is a name with an optional path prefix", "[stream_name]") {
  auto plain = parse_stream_selector("docs");
  REQUIRE(plain);
  CHECK(plain->stream == "docs");
  CHECK(plain->prefix.empty());

  auto prefixed = parse_stream_selector("docs:/a/b");
  REQUIRE(prefixed);
  CHECK(prefixed->stream == "docs");
  CHECK(prefixed->prefix == "/a/b");

  auto root = parse_stream_selector("docs:/");
  REQUIRE(root);
  CHECK(root->prefix == "/");
}

TEST_CASE("a selector splits at the first \":/\"", "[stream_name]") {
  auto watch = parse_stream_selector("watch:build");
  REQUIRE(watch);
  CHECK(watch->stream == "watch:build");
  CHECK(watch->prefix.empty());

  auto watch_prefixed = parse_stream_selector("watch:build:/x:/y");
  REQUIRE(watch_prefixed);
  CHECK(watch_prefixed->stream == "watch:build");
  CHECK(watch_prefixed->prefix == "/x:/y");
}

TEST_CASE("bad selectors are refused", "[stream_name]") {
  for (const char* text :
       {"", ":/a", "Docs", "docs:", "docs:a", "watch:", "watch:Up", "a:b", "docs:/a\x01"}) {
    INFO("input: '" << text << "'");
    CHECK_FALSE(parse_stream_selector(text));
  }
}
