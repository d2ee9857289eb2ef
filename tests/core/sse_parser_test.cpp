#include "core/sse_parser.hpp"

#include <vector>

#include <catch2/catch.hpp>

using namespace tidings::core;

namespace {

struct collector {
  sse_parser parser;
  std::vector<sse_message> messages;

  explicit collector(std::size_t max = 1 << 20) : parser(max) {}
  bool feed(std::string_view bytes) {
    return parser.feed(bytes, [this](sse_message&& m) { messages.push_back(std::move(m)); });
  }
};

std::vector<sse_message> parse_whole(std::string_view bytes) {
  collector c;
  REQUIRE(c.feed(bytes));
  return std::move(c.messages);
}

bool same(const sse_message& a, const sse_message& b) {
  return a.event == b.event && a.data == b.data && a.id == b.id;
}

}  // namespace

TEST_CASE("basic fields", "[sse_parser]") {
  auto msgs = parse_whole("id: 1:2\nevent: hello\ndata: {\"a\":1}\n\n");
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].id == "1:2");
  CHECK(msgs[0].event == "hello");
  CHECK(msgs[0].data == "{\"a\":1}");
}

TEST_CASE("data lines join with newline and lose the last one", "[sse_parser]") {
  auto msgs = parse_whole("data: a\ndata:b\ndata:  c\ndata\ndata:\n\n");
  REQUIRE(msgs.size() == 1);
  // Only one leading space is stripped; "data" without colon is an empty value.
  CHECK(msgs[0].data == "a\nb\n c\n\n");
  CHECK_FALSE(msgs[0].id);
}

TEST_CASE("every line ending works", "[sse_parser]") {
  for (std::string_view text :
       {"data: x\n\n", "data: x\r\r", "data: x\r\n\r\n", "data: x\r\n\n", "data: x\n\r"}) {
    auto msgs = parse_whole(text);
    REQUIRE(msgs.size() == 1);
    CHECK(msgs[0].data == "x");
  }
  // "\r\r" is two line endings, the second one a blank line.
  auto msgs = parse_whole("data: a\r\rdata: b\n\n");
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[1].data == "b");
}

TEST_CASE("comments and unknown fields are ignored", "[sse_parser]") {
  auto msgs = parse_whole(": hello\n:\nfoo: bar\ndata: x\n: between\nDATA: no\n\n");
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].data == "x");
  // A comment alone dispatches nothing.
  CHECK(parse_whole(": keepalive\n\n").empty());
}

TEST_CASE("a message without data or event is not dispatched, but its id counts", "[sse_parser]") {
  collector c;
  REQUIRE(c.feed("id: 5\n\n"));
  CHECK(c.messages.empty());
  CHECK(c.parser.last_event_id() == "5");
  REQUIRE(c.feed("data: x\n\n"));
  REQUIRE(c.messages.size() == 1);
  CHECK_FALSE(c.messages[0].id);  // no id field in that message
  CHECK(c.parser.last_event_id() == "5");
}

TEST_CASE("a named event without data is dispatched with empty data", "[sse_parser]") {
  auto msgs = parse_whole("event: ping\n\n");
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].event == "ping");
  CHECK(msgs[0].data.empty());
}

TEST_CASE("id handling", "[sse_parser]") {
  collector c;
  REQUIRE(c.feed("id: a\ndata: 1\n\n"));
  REQUIRE(c.feed(std::string_view("id: b\0c\ndata: 2\n\n", 17)));
  REQUIRE(c.feed("id\ndata: 3\n\n"));
  REQUIRE(c.messages.size() == 3);
  CHECK(c.messages[0].id == "a");
  CHECK_FALSE(c.messages[1].id);  // an id with NUL is ignored
  CHECK(c.messages[2].id == "");  // "id" alone resets to empty
  CHECK(c.parser.last_event_id().empty());
}

TEST_CASE("retry accepts only digits", "[sse_parser]") {
  collector c;
  CHECK_FALSE(c.parser.retry_ms());
  REQUIRE(c.feed("retry: 2000\n\n"));
  CHECK(c.parser.retry_ms() == 2000);
  REQUIRE(c.feed("retry: 12a\nretry: -5\nretry:  7\nretry:\nretry: 99999999999999\n\n"));
  CHECK(c.parser.retry_ms() == 2000);
  REQUIRE(c.feed("retry:0\n\n"));
  CHECK(c.parser.retry_ms() == 0);
  CHECK(c.messages.empty());
}

TEST_CASE("an event field is reset after dispatch", "[sse_parser]") {
  auto msgs = parse_whole("event: a\ndata: 1\n\ndata: 2\n\n");
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0].event == "a");
  CHECK(msgs[1].event.empty());
}

TEST_CASE("an unfinished message is not dispatched", "[sse_parser]") {
  collector c;
  REQUIRE(c.feed("data: x\n"));
  CHECK(c.messages.empty());
  REQUIRE(c.feed("data: y"));
  CHECK(c.messages.empty());
  REQUIRE(c.feed("\n\n"));
  REQUIRE(c.messages.size() == 1);
  CHECK(c.messages[0].data == "x\ny");
}

TEST_CASE("any chunk boundary gives the same messages", "[sse_parser]") {
  const std::string stream =
      "retry: 1500\r\n"
      ": comment\r\n"
      "\r\n"
      "event: hello\r\n"
      "data: {\"streams\":{}}\r\n"
      "\r\n"
      "id: 0000000000000001:1\r"
      "data: line one\r"
      "data: line two\r"
      "\r"
      "id: 0000000000000001:2\n"
      "data:no space\n"
      "data\n"
      "\n"
      "event: heartbeat\r\n"
      "data: {}\n"
      "\r\n";
  auto whole = parse_whole(stream);
  REQUIRE(whole.size() == 4);
  CHECK(whole[1].data == "line one\nline two");
  CHECK(whole[2].data == "no space\n");

  for (std::size_t a = 0; a <= stream.size(); ++a) {
    for (std::size_t b = a; b <= stream.size(); ++b) {
      collector c;
      REQUIRE(c.feed(std::string_view(stream).substr(0, a)));
      REQUIRE(c.feed(std::string_view(stream).substr(a, b - a)));
      REQUIRE(c.feed(std::string_view(stream).substr(b)));
      REQUIRE(c.messages.size() == whole.size());
      for (std::size_t i = 0; i < whole.size(); ++i) {
        INFO("split at " << a << " and " << b << ", message " << i);
        CHECK(same(c.messages[i], whole[i]));
      }
      CHECK(c.parser.retry_ms() == 1500);
      CHECK(c.parser.last_event_id() == "0000000000000001:2");
    }
  }
}

TEST_CASE("one byte at a time", "[sse_parser]") {
  const std::string stream = "data: a\r\n\r\ndata: b\r\rdata: c\n\n";
  collector c;
  for (char ch : stream) REQUIRE(c.feed(std::string_view(&ch, 1)));
  REQUIRE(c.messages.size() == 3);
  CHECK(c.messages[0].data == "a");
  CHECK(c.messages[1].data == "b");
  CHECK(c.messages[2].data == "c");
}

TEST_CASE("CRLF split across chunks is one line ending", "[sse_parser]") {
  collector c;
  REQUIRE(c.feed("data: a\r"));
  REQUIRE(c.feed("\ndata: b\r"));
  REQUIRE(c.feed("\n\r"));
  REQUIRE(c.feed("\n"));
  REQUIRE(c.messages.size() == 1);
  CHECK(c.messages[0].data == "a\nb");
}

TEST_CASE("a message over the limit fails the parser", "[sse_parser]") {
  collector c(64);
  REQUIRE(c.feed("data: " + std::string(40, 'x') + "\n\n"));
  REQUIRE(c.messages.size() == 1);
  // Many small lines add up over the limit.
  bool ok = true;
  for (int i = 0; i < 10 && ok; ++i) ok = c.feed("data: 0123456789\n");
  CHECK_FALSE(ok);
  CHECK(c.parser.failed());
  // Once failed, input is ignored.
  CHECK_FALSE(c.feed("\n\ndata: x\n\n"));
  CHECK(c.messages.size() == 1);
}

TEST_CASE("an endless unterminated line fails the parser", "[sse_parser]") {
  collector c(64);
  bool ok = true;
  for (int i = 0; i < 20 && ok; ++i) ok = c.feed("xxxxxxxx");
  CHECK_FALSE(ok);
  CHECK(c.parser.failed());
  CHECK(c.messages.empty());
}

TEST_CASE("a long line in one chunk fails the parser", "[sse_parser]") {
  collector c(64);
  CHECK_FALSE(c.feed("data: " + std::string(100, 'y') + "\n\n"));
  CHECK(c.messages.empty());
}

TEST_CASE("the limit is per message", "[sse_parser]") {
  collector c(64);
  for (int i = 0; i < 100; ++i) REQUIRE(c.feed("data: " + std::string(30, 'z') + "\n\n"));
  CHECK(c.messages.size() == 100);
  // Comments carry no payload and do not count.
  for (int i = 0; i < 100; ++i) REQUIRE(c.feed(": " + std::string(30, 'c') + "\n"));
  CHECK_FALSE(c.parser.failed());
}
