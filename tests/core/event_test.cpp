#include "core/event.hpp"
#include "core/json_text.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;

TEST_CASE("an event has defaults", "[event]") {
  event e;
  CHECK(e.path == "/");
  CHECK(e.type == "CHANGED");
  CHECK(e.data_json == "null");
  CHECK(e.time_ms == 0);
}

TEST_CASE("good paths pass", "[event]") {
  CHECK_FALSE(check_event_path("/"));
  CHECK_FALSE(check_event_path("/a.md"));
  CHECK_FALSE(check_event_path("/dir/sub dir/file?x=1#y"));
  CHECK_FALSE(check_event_path("/caf\xc3\xa9"));       // é
  CHECK_FALSE(check_event_path("/\xe2\x82\xac"));      // €
  CHECK_FALSE(check_event_path("/\xf0\x9f\x98\x80"));  // emoji
  CHECK_FALSE(check_event_path("/" + std::string(max_path_bytes - 1, 'x')));
  // Dots that are not a whole '.' or '..' segment are names like any other.
  for (auto ok : {"/a/..b", "/a/.hidden", "/a/...", "/a/%2ex", "/a/b.", "/a//b", "/dir/"}) {
    INFO(ok);
    CHECK_FALSE(check_event_path(ok));
  }
}

TEST_CASE("a '.' or '..' segment, plain or percent-encoded, is refused (issue 28)", "[event]") {
  for (auto bad : {"/a/../b", "/a/%2e%2e/b", "/a/%2E%2e/b", "/a/.%2e/b", "/a/.", "/./a", "/a/..", "/%2e"}) {
    INFO(bad);
    auto why = check_event_path(bad);
    REQUIRE(why);
    CHECK(why->find("'..' segment") != std::string::npos);
  }
}

TEST_CASE("bad paths get a reason", "[event]") {
  CHECK(check_event_path(""));
  CHECK(check_event_path("a"));
  CHECK(check_event_path("/" + std::string(max_path_bytes, 'x')));
  CHECK(check_event_path("/a\nb"));
  CHECK(check_event_path("/a\rb"));
  CHECK(check_event_path("/a\tb"));
  CHECK(check_event_path("/a\x7f"));
  CHECK(check_event_path(std::string_view("/a\0b", 4)));
  CHECK(check_event_path("/\xc2\x85"));  // U+0085, a C1 control
}

TEST_CASE("paths must be valid UTF-8", "[event]") {
  const char* bad[] = {
      "/\x80",              // lone continuation byte
      "/\xc3",              // truncated
      "/\xc3\x28",          // bad continuation
      "/\xc0\xaf",          // overlong '/'
      "/\xe0\x80\xaf",      // overlong, 3 bytes
      "/\xed\xa0\x80",      // surrogate U+D800
      "/\xf4\x90\x80\x80",  // past U+10FFFF
      "/\xf8\x88\x80\x80\x80",
      "/\xff",
      "/\xe2\x82",  // truncated 3-byte
  };
  for (const char* path : bad) {
    INFO("path bytes: " << std::string_view(path).size());
    auto reason = check_event_path(path);
    REQUIRE(reason);
  }
}

TEST_CASE("event types", "[event]") {
  CHECK_FALSE(check_event_type("MODIFIED"));
  CHECK_FALSE(check_event_type("my.type-2_x"));
  CHECK_FALSE(check_event_type(std::string(max_type_bytes, 'A')));
  CHECK(check_event_type(""));
  CHECK(check_event_type(std::string(max_type_bytes + 1, 'A')));
  CHECK(check_event_type("A B"));
  CHECK(check_event_type("a/b"));
  CHECK(check_event_type("\xc3\xa9"));
}

TEST_CASE("json_string escapes what JSON requires", "[json_text]") {
  CHECK(json_string("") == R"("")");
  CHECK(json_string("plain") == R"("plain")");
  CHECK(json_string("a\"b\\c") == R"("a\"b\\c")");
  CHECK(json_string("\n\r\t\b\f") == R"("\n\r\t\b\f")");
  CHECK(json_string(std::string_view("\0\x01\x1f", 3)) == R"("\u0000\u0001\u001f")");
  CHECK(json_string("caf\xc3\xa9/") == "\"caf\xc3\xa9/\"");  // UTF-8 and '/' as they are

  std::string out = "x=";
  append_json_string(out, "y");
  CHECK(out == R"(x="y")");
}
