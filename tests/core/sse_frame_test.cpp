#include "core/sse_frame.hpp"

#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/sse_parser.hpp"

using namespace tidings::core;

namespace {

std::vector<sse_message> parse_all(std::string_view bytes) {
  std::vector<sse_message> out;
  sse_parser parser;
  REQUIRE(parser.feed(bytes, [&](sse_message&& m) { out.push_back(std::move(m)); }));
  return out;
}

// What an SSE reader gets back for `payload`: every line break becomes '\n'.
std::string normalize_breaks(std::string_view payload) {
  std::string out;
  for (std::size_t i = 0; i < payload.size(); ++i) {
    if (payload[i] == '\r') {
      out += '\n';
      if (i + 1 < payload.size() && payload[i + 1] == '\n') ++i;
    } else {
      out += payload[i];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("data lines split on every kind of line break", "[sse_frame]") {
  auto lines = [](std::string_view payload) {
    std::string out;
    append_data_lines(out, payload);
    return out;
  };
  CHECK(lines("") == "data: \n");
  CHECK(lines("x") == "data: x\n");
  CHECK(lines("a\nb") == "data: a\ndata: b\n");
  CHECK(lines("a\rb") == "data: a\ndata: b\n");
  CHECK(lines("a\r\nb") == "data: a\ndata: b\n");
  CHECK(lines("a\n\rb") == "data: a\ndata: \ndata: b\n");
  CHECK(lines("a\n") == "data: a\ndata: \n");
  CHECK(lines("a\r") == "data: a\ndata: \n");
  CHECK(lines("\n") == "data: \ndata: \n");
  CHECK(lines("data: x\n\nevent: y") == "data: data: x\ndata: \ndata: event: y\n");
}

TEST_CASE("sse_event writes optional id and event fields", "[sse_frame]") {
  CHECK(sse_event("", "", "x") == "data: x\n\n");
  CHECK(sse_event("1:1", "", "x") == "id: 1:1\ndata: x\n\n");
  CHECK(sse_event("", "heartbeat", "{}") == "event: heartbeat\ndata: {}\n\n");
  CHECK(sse_event("7", "resync", "a\nb") == "id: 7\nevent: resync\ndata: a\ndata: b\n\n");
  CHECK(sse_event("a\nb", "c\r\nd", "x") == "id: a b\nevent: c  d\ndata: x\n\n");
}

TEST_CASE("sse_retry", "[sse_frame]") {
  CHECK(sse_retry(2000) == "retry: 2000\n\n");
}

TEST_CASE("event_json has the documented shape", "[sse_frame]") {
  event e;
  e.path = "/a.md";
  e.type = "MODIFIED";
  e.data_json = R"({"k":[1,2]})";
  e.time_ms = 1764556800000;
  CHECK(event_json("docs", {0x9f3a, 1043}, e) ==
        R"({"stream":"docs","cursor":"0000000000009f3a:1043","path":"/a.md","type":"MODIFIED",)"
        R"("time":1764556800000,"data":{"k":[1,2]}})");

  event odd;
  odd.path = "/q\"\\\n";
  odd.time_ms = -1;
  CHECK(event_json("s", {1, 2}, odd) ==
        R"({"stream":"s","cursor":"0000000000000001:2","path":"/q\"\\\n","type":"CHANGED",)"
        R"("time":-1,"data":null})");
}

TEST_CASE("make_sse_frame shares one body after the id line", "[sse_frame]") {
  event e;
  e.path = "/x";
  e.data_json = "[1,\n2]";
  auto frame = make_sse_frame("docs", {0xab, 5}, e);
  CHECK(frame.seq == 5);
  CHECK(frame.path == "/x");
  std::string json = event_json("docs", {0xab, 5}, e);
  CHECK(frame.bytes.substr(0, frame.body_offset) == "id: 00000000000000ab:5\n");
  std::string expected_body;
  append_data_lines(expected_body, json);
  expected_body += '\n';
  CHECK(frame.body() == expected_body);
  CHECK(frame.bytes.ends_with("\n\n"));

  auto messages = parse_all(frame.bytes);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].id == "00000000000000ab:5");
  CHECK(messages[0].event.empty());
  CHECK(messages[0].data == json);

  // A multi-stream session writes its own id line, then the shared body.
  auto custom = parse_all("id: 1:1,2:2\n" + std::string(frame.body()));
  REQUIRE(custom.size() == 1);
  CHECK(custom[0].id == "1:1,2:2");
  CHECK(custom[0].data == json);
}

TEST_CASE("any payload survives the frame and the parser", "[sse_frame]") {
  std::mt19937 rng(20261130);
  // Bytes chosen to stress framing: line breaks, field syntax, NUL, UTF-8.
  const std::string alphabet = std::string("ab:\n\r \"\\{}") + std::string(1, '\0') + "\xc3\xa9" + "\x01";
  auto random_text = [&](std::size_t max_len) {
    std::uniform_int_distribution<std::size_t> len(0, max_len);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::string s;
    for (std::size_t n = len(rng); n > 0; --n) s += alphabet[pick(rng)];
    return s;
  };

  for (int round = 0; round < 2000; ++round) {
    event e;
    e.path = "/" + random_text(20);
    e.type = random_text(8);
    e.data_json = random_text(60);
    e.time_ms = static_cast<std::int64_t>(rng());
    cursor c{rng(), static_cast<std::uint64_t>(round)};
    std::string json = event_json("docs", c, e);

    auto frame_messages = parse_all(make_sse_frame("docs", c, e).bytes);
    REQUIRE(frame_messages.size() == 1);
    auto event_messages = parse_all(sse_event("", "named", json));
    REQUIRE(event_messages.size() == 1);
    CHECK(event_messages[0].event == "named");

    // Only the raw data_json can hold a line break; a CR arrives as LF.
    CHECK(frame_messages[0].data == normalize_breaks(json));
    CHECK(event_messages[0].data == normalize_breaks(json));
    if (json.find('\r') == std::string::npos) CHECK(frame_messages[0].data == json);
  }
}

TEST_CASE("payloads without CR come back byte for byte", "[sse_frame]") {
  for (std::string payload :
       {"", "\n", "\n\n", "a\n", "\na", "a\n\nb", ": not a comment", "data: x", "x\n\n\n"}) {
    event e;
    e.data_json = payload;
    std::string json = event_json("s", {1, 1}, e);
    auto messages = parse_all(make_sse_frame("s", {1, 1}, e).bytes);
    REQUIRE(messages.size() == 1);
    CHECK(messages[0].data == json);

    auto raw = parse_all(sse_event("", "", payload));
    REQUIRE(raw.size() == 1);
    CHECK(raw[0].data == payload);
  }
}
