#include "core/event_body.hpp"

#include <string>

#include <catch2/catch.hpp>

using namespace tidings::core;

namespace {

// A JSON array of n copies of `item`.
std::string array_of(std::size_t n, const std::string& item) {
  std::string out = "[";
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    out += item;
  }
  return out + "]";
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST_CASE("event_body: one object is one event", "[event_body]") {
  event_body body;
  REQUIRE_FALSE(
      parse_event_body(R"({"path":"/a.md","type":"UPDATED","data":{"b":1, "a":[true, null]}})", body));
  CHECK(body.single);
  REQUIRE(body.events.size() == 1);
  CHECK(body.events[0].path == "/a.md");
  CHECK(body.events[0].type == "UPDATED");
  CHECK(body.events[0].data_json == R"({"a":[true,null],"b":1})");
}

TEST_CASE("event_body: missing fields take the event defaults", "[event_body]") {
  event_body body;
  REQUIRE_FALSE(parse_event_body("{}", body));
  REQUIRE(body.events.size() == 1);
  CHECK(body.events[0].path == "/");
  CHECK(body.events[0].type == "CHANGED");
  CHECK(body.events[0].data_json == "null");
}

TEST_CASE("event_body: an array is a batch in order", "[event_body]") {
  event_body body;
  REQUIRE_FALSE(parse_event_body(R"([{"path":"/1"},{"path":"/2","data":"x"}])", body));
  CHECK_FALSE(body.single);
  REQUIRE(body.events.size() == 2);
  CHECK(body.events[0].path == "/1");
  CHECK(body.events[1].path == "/2");
  CHECK(body.events[1].data_json == R"("x")");

  event_body one;
  REQUIRE_FALSE(parse_event_body("[{}]", one));
  CHECK_FALSE(one.single);
  CHECK(one.events.size() == 1);
}

TEST_CASE("event_body: batch size limits", "[event_body]") {
  event_body body;
  CHECK(parse_event_body("[]", body) == "an empty array publishes nothing");
  CHECK(parse_event_body(" [ ] ", body) == "an empty array publishes nothing");
  REQUIRE_FALSE(parse_event_body(array_of(max_publish_events, "{}"), body));
  CHECK(body.events.size() == max_publish_events);
  event_body too_many;
  CHECK(parse_event_body(array_of(max_publish_events + 1, "{}"), too_many) ==
        "at most 1000 events per publish");
  CHECK(too_many.events.empty());
}

TEST_CASE("event_body: bad fields get the publisher's reason", "[event_body]") {
  event_body body;
  CHECK(parse_event_body("42", body) == "an event must be a JSON object");
  CHECK(parse_event_body(R"({"path":1})", body) == "\"path\" must be a string");
  CHECK(parse_event_body(R"({"type":null})", body) == "\"type\" must be a string");
  CHECK(parse_event_body(R"({"type":""})", body) == "\"type\" type must not be empty");
  CHECK(parse_event_body(R"({"type":"a b"})", body) == "\"type\" type may only contain [A-Za-z0-9_.-]");
  CHECK(parse_event_body(R"({"id":1})", body) == "unknown field \"id\" (allowed: path, type, data)");
  CHECK(parse_event_body(R"([{}, {}, {"extra":true}])", body) ==
        "event 2: unknown field \"extra\" (allowed: path, type, data)");
  CHECK(parse_event_body(R"([{}, 3])", body) == "event 1: an event must be a JSON object");
  CHECK(body.events.empty());  // untouched on failure
}

TEST_CASE("event_body: bad paths are refused", "[event_body]") {
  event_body body;
  CHECK(parse_event_body(R"({"path":"a"})", body) == "\"path\" path must start with '/'");
  CHECK(parse_event_body(R"({"path":""})", body) == "\"path\" path must start with '/'");
  CHECK(parse_event_body(R"({"path":"/a\nb"})", body) == "\"path\" path contains a control character");
  CHECK(parse_event_body(R"({"path":"/)" + std::string(max_path_bytes, 'x') + "\"}", body) ==
        "\"path\" path is longer than 1024 bytes");
  CHECK(parse_event_body(R"([{"path":"/ok"},{"path":"no"}])", body) ==
        "event 1: \"path\" path must start with '/'");
}

TEST_CASE("event_body: nesting is limited before parsing", "[event_body]") {
  CHECK(json_nesting_within(nested(max_json_nesting), max_json_nesting));
  CHECK_FALSE(json_nesting_within(nested(max_json_nesting + 1), max_json_nesting));
  // Brackets inside strings, escaped quotes included, do not count.
  CHECK(json_nesting_within(R"({"a":"[[[[\"[[[["})", 1));
  CHECK_FALSE(json_nesting_within(R"({"a":[]})", 1));
  // Stray closers do not make room for more openers.
  CHECK_FALSE(json_nesting_within("]]]][[", 1));

  event_body body;
  std::string deep = R"({"data":)" + nested(max_json_nesting - 1) + "}";
  REQUIRE_FALSE(parse_event_body(deep, body));
  std::string too_deep = R"({"data":)" + nested(max_json_nesting) + "}";
  CHECK(parse_event_body(too_deep, body) == "JSON nests deeper than 128 levels");
  CHECK(parse_event_body(std::string(100000, '['), body) == "JSON nests deeper than 128 levels");
}

TEST_CASE("event_body: malformed JSON says where", "[event_body]") {
  event_body body;
  auto err = parse_event_body(R"({"path":)", body);
  REQUIRE(err);
  CHECK(err->starts_with("malformed JSON: [json.exception.parse_error.101]"));
  CHECK(parse_event_body("", body)->starts_with("malformed JSON: "));
  CHECK(parse_event_body("{} {}", body)->starts_with("malformed JSON: "));
  // nlohmann would stop at the NUL and accept the object before it.
  CHECK(parse_event_body(std::string_view("{}\0junk", 7), body) ==
        "malformed JSON: unexpected NUL byte at offset 2");
  CHECK(parse_event_body(std::string_view("{\"data\":\"a\0b\"}", 14), body)->starts_with("malformed JSON: "));
  CHECK(body.events.empty());
}

TEST_CASE("event_body: invalid UTF-8 in data is refused", "[event_body]") {
  event_body body;
  auto err = parse_event_body("{\"data\":\"caf\xc3\"}", body);
  REQUIRE(err);
  CHECK(err->starts_with("malformed JSON: "));
  CHECK(err->find("ill-formed UTF-8") != std::string::npos);
  // A lone surrogate escape is not a character either.
  CHECK(parse_event_body(R"({"data":"\ud800"})", body)->starts_with("malformed JSON: "));
  // Valid multi-byte text passes through unchanged.
  REQUIRE_FALSE(parse_event_body("{\"data\":\"caf\xc3\xa9 \\u20ac\"}", body));
  CHECK(body.events[0].data_json == "\"caf\xc3\xa9 \xe2\x82\xac\"");
}
