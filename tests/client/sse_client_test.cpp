#include "client/sse_client.hpp"

#include <catch2/catch.hpp>

#include "tests/support/loopback_server.hpp"

using namespace tidings;
using namespace tidings::client;
using namespace tidings::testing;
using namespace std::chrono_literals;

namespace {

const std::string sse_head =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

}  // namespace

TEST_CASE("sse_stream de-chunks and parses a stream cut at odd places", "[client][sse]") {
  const std::string body =
      "retry: 2000\n\n"
      "event: hello\ndata: {\"streams\":{\"docs\":\"e:0\"}}\n\n"
      "id: e:1\ndata: {\"a\":\ndata: 1}\n\n"
      ": a comment\n\n"
      "id: e:2\ndata: two\n\n";
  // Chunks end mid-line and mid-field; writes then cut mid chunk-size line.
  std::string wire = sse_head + chunked(body, {1, 7, 3, 20, 2, 13}) + "0\r\n\r\n";
  std::string request;
  loopback_server server([&](tcp_socket& s) {
    request = read_request(s);
    for (std::size_t pos = 0; pos < wire.size(); pos += 5) write_all(s, wire.substr(pos, 5));
    wait_for_close(s);
  });

  sse_stream stream(server.address(), "/v1/sse?stream=docs", {{"Last-Event-ID", "e:0"}}, 5s);
  CHECK(stream.status() == 200);
  CHECK(stream.content_type() == "text/event-stream");
  CHECK(request.rfind("GET /v1/sse?stream=docs HTTP/1.1\r\n", 0) == 0);
  CHECK(request.find("Accept: text/event-stream\r\n") != std::string::npos);
  CHECK(request.find("Last-Event-ID: e:0\r\n") != std::string::npos);

  core::sse_message m;
  REQUIRE(stream.next(m, 5s) == sse_stream::result::message);
  CHECK(m.event == "hello");
  CHECK(m.data == "{\"streams\":{\"docs\":\"e:0\"}}");
  CHECK_FALSE(m.id);
  CHECK(stream.last_event_id().empty());

  REQUIRE(stream.next(m, 5s) == sse_stream::result::message);
  CHECK(m.event.empty());
  CHECK(m.data == "{\"a\":\n1}");
  CHECK(m.id == std::optional<std::string>("e:1"));
  CHECK(stream.last_event_id() == "e:1");

  REQUIRE(stream.next(m, 5s) == sse_stream::result::message);
  CHECK(m.data == "two");
  CHECK(stream.last_event_id() == "e:2");

  CHECK(stream.next(m, 5s) == sse_stream::result::closed);
  CHECK(stream.next(m, 5s) == sse_stream::result::closed);
}

TEST_CASE("sse_stream hands out messages as they arrive and survives a timeout", "[client][sse]") {
  gate more, done;
  loopback_server server([&](tcp_socket& s) {
    read_request(s);
    write_all(s, sse_head + chunked("event: hello\ndata: {}\n\n", {100}));
    if (!more.wait()) return;
    write_all(s, chunked("id: c:7\ndata: late\n\n", {4}));
    // Dropped without the last chunk: the client must see "closed", not hang.
    done.wait();
  });

  sse_stream stream(server.address(), "/v1/sse?stream=s", {}, 5s);
  core::sse_message m;
  REQUIRE(stream.next(m, 5s) == sse_stream::result::message);
  CHECK(m.event == "hello");
  CHECK(stream.next(m, 50ms) == sse_stream::result::timeout);
  more.open();
  REQUIRE(stream.next(m, 5s) == sse_stream::result::message);
  CHECK(m.data == "late");
  CHECK(stream.last_event_id() == "c:7");
  done.open();
  CHECK(stream.next(m, 5s) == sse_stream::result::closed);
}

TEST_CASE("sse_stream keeps the body of an error reply", "[client][sse]") {
  const std::string body = R"({"error":"no stream parameter"})";
  loopback_server server([&](tcp_socket& s) {
    read_request(s);
    write_all(s, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
    wait_for_close(s);
  });
  sse_stream stream(server.address(), "/v1/sse", {}, 5s);
  CHECK(stream.status() == 400);
  CHECK(stream.content_type() == "application/json");
  CHECK(stream.error_body() == body);
  core::sse_message m;
  CHECK(stream.next(m, 5s) == sse_stream::result::closed);
}

TEST_CASE("sse_stream keeps a chunked error body too", "[client][sse]") {
  const std::string body = R"({"error":"draining"})";
  loopback_server server([&](tcp_socket& s) {
    read_request(s);
    write_all(s, "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n" +
                     chunked(body, {3}) + "0\r\n\r\n");
    wait_for_close(s);
  });
  sse_stream stream(server.address(), "/v1/sse?stream=s", {}, 5s);
  CHECK(stream.status() == 503);
  CHECK(stream.error_body() == body);
}

TEST_CASE("sse_stream throws transport_error when no header comes in time", "[client][sse]") {
  loopback_server server([](tcp_socket& s) {
    read_request(s);
    wait_for_close(s);
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(sse_stream(server.address(), "/v1/sse?stream=s", {}, 200ms), transport_error);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("pause_reading stops taking bytes and close ends the stream", "[client][sse]") {
  gate sent;
  loopback_server server([&](tcp_socket& s) {
    read_request(s);
    write_all(s, sse_head + chunked("event: hello\ndata: {}\n\n", {100}));
    sent.wait();
    write_all(s, chunked("id: c:1\ndata: x\n\n", {100}));
    wait_for_close(s);
  });
  sse_stream stream(server.address(), "/v1/sse?stream=s", {}, 5s);
  core::sse_message m;
  REQUIRE(stream.next(m, 5s) == sse_stream::result::message);
  stream.pause_reading();
  sent.open();
  // Paused: even with bytes on the way, nothing is read and nothing waits.
  CHECK(stream.next(m, 5s) == sse_stream::result::timeout);
  stream.close();
  CHECK(stream.next(m, 5s) == sse_stream::result::closed);
}
