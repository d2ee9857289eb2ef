#include <catch2/catch.hpp>

#include "core/watch_uri.hpp"

using namespace tidings::core;

TEST_CASE("watch names are stream names of at most 64 bytes", "[watch_uri]") {
  CHECK(valid_watch_name("cm"));
  CHECK(valid_watch_name("bids.v2_x-1"));
  CHECK(valid_watch_name(std::string(64, 'a')));
  CHECK_FALSE(valid_watch_name(std::string(65, 'a')));
  CHECK_FALSE(valid_watch_name(""));
  CHECK_FALSE(valid_watch_name("Cm"));
  CHECK_FALSE(valid_watch_name("watch:cm"));
  CHECK(watch_notice_stream("cm") == "watch:cm");
}

TEST_CASE("stream URIs with and without a prefix", "[watch_uri]") {
  std::string error;
  auto plain = parse_stream_uri("stream://memo", &error);
  REQUIRE(plain);
  CHECK(plain->stream == "memo");
  CHECK(plain->prefix.empty());

  auto root = parse_stream_uri("stream://memo/", &error);
  REQUIRE(root);
  CHECK(root->prefix.empty());

  auto prefixed = parse_stream_uri("stream://library/docs/a.md", &error);
  REQUIRE(prefixed);
  CHECK(prefixed->stream == "library");
  CHECK(prefixed->prefix == "/docs/a.md");
}

TEST_CASE("URIs that cannot be watched say why", "[watch_uri]") {
  std::string error;
  CHECK_FALSE(parse_stream_uri("kcp-events://watch/root:app/configmaps", &error));
  CHECK(error.find("kcp-events://") != std::string::npos);
  CHECK_FALSE(parse_stream_uri("memo", &error));
  CHECK(error.find("stream://NAME") != std::string::npos);
  CHECK_FALSE(parse_stream_uri("stream://", &error));
  CHECK_FALSE(parse_stream_uri("stream://Bad Name/x", &error));
  CHECK_FALSE(parse_stream_uri("stream://watch:cm", &error));
  CHECK_FALSE(parse_stream_uri(std::string("stream://memo/a\x01", 16), &error));
  CHECK(error.find("prefix") != std::string::npos);
}
