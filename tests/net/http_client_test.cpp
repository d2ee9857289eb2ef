#include "net/http_client.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include "tests/net/run_loop.hpp"
#include "tests/support/loopback_server.hpp"

namespace tidings::net {
namespace {

using namespace std::chrono_literals;
using tidings::testing::gate;
using tidings::testing::loopback_server;
using tidings::testing::tcp_socket;
namespace testing = tidings::testing;

std::string response(const std::string& status_line, const std::string& headers, const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

const std::string chunked_head =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

}  // namespace

TEST_CASE("net::parse_http_url splits host, port and target", "[http]") {
  net::http_url u;
  std::string error;
  REQUIRE(net::parse_http_url("http://example.test:8080/a/b?c=1", &u, &error));
  CHECK(u.host == "example.test");
  CHECK(u.port == "8080");
  CHECK(u.target == "/a/b?c=1");
  REQUIRE(net::parse_http_url("http://h", &u, &error));
  CHECK(u.port == "80");
  CHECK(u.target == "/");
  REQUIRE(net::parse_http_url("http://[::1]:9/x", &u, &error));
  CHECK(u.host == "::1");
  CHECK(u.port == "9");
  CHECK_FALSE(u.tls);
  REQUIRE(net::parse_http_url("HTTPS://h/x", &u, &error));
  CHECK(u.tls);
  CHECK(u.port == "443");
  CHECK(u.target == "/x");
  REQUIRE(net::parse_http_url("https://h:8443", &u, &error));
  CHECK(u.port == "8443");
  CHECK_FALSE(net::parse_http_url("ftp://h/", &u, &error));
  CHECK(error == "not an http:// or https:// URL");
  CHECK_FALSE(net::parse_http_url("http://h:99999/", &u, &error));
  CHECK_FALSE(net::parse_http_url("http://:80/", &u, &error));
}

TEST_CASE("net::http_fetch GET returns status, headers and body", "[http]") {
  std::string seen;
  loopback_server server([&](tcp_socket& s) {
    seen = testing::read_request(s);
    testing::write_all(s, response("201 Created", "X-Test: yes\r\n", "hello"));
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = server.url("/path?q=1");
  req.headers = {{"X-Custom", "abc"}};
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  REQUIRE(result->error.empty());
  CHECK(result->response.status == 201);
  CHECK(result->response.header("x-test") == "yes");
  CHECK(result->response.header("absent").empty());
  CHECK(result->response.body == "hello");
  CHECK(seen.rfind("GET /path?q=1 HTTP/1.1\r\n", 0) == 0);
  CHECK(seen.find("X-Custom: abc\r\n") != std::string::npos);
  CHECK(seen.find("Host: 127.0.0.1:") != std::string::npos);
}

TEST_CASE("net::http_fetch POST sends the body", "[http]") {
  loopback_server server([&](tcp_socket& s) {
    const auto request = testing::read_request(s);
    const auto body = request.substr(request.find("\r\n\r\n") + 4);
    const bool is_post = request.rfind("POST /echo HTTP/1.1", 0) == 0;
    testing::write_all(s, response(is_post ? "200 OK" : "400 Bad", "", body));
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.method = "POST";
  req.url = server.url("/echo");
  req.headers = {{"Content-Type", "application/json"}};
  req.body = R"({"a":1})";
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  REQUIRE(result->error.empty());
  CHECK(result->response.status == 200);
  CHECK(result->response.body == R"({"a":1})");
}

TEST_CASE("net::http_fetch counts any status as success", "[http]") {
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, response("404 Not Found", "", "nope"));
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = server.url("/missing");
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  CHECK(result->error.empty());
  CHECK(result->response.status == 404);
  CHECK(result->response.body == "nope");
}

TEST_CASE("net::http_fetch times out when the server does not answer", "[http]") {
  gate release;
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    release.wait();
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = server.url("/slow");
  req.timeout = 200ms;
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  CHECK(result->error.find("timed out after 200 ms") != std::string::npos);
  release.open();
}

TEST_CASE("net::http_fetch enforces the body cap", "[http]") {
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, response("200 OK", "", std::string(2000, 'x')));
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = server.url("/big");
  req.max_body_bytes = 1000;
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  INFO(result->error);
  CHECK(result->error.find("exceeds 1000 bytes") != std::string::npos);
}

TEST_CASE("net::http_fetch enforces the body cap on a chunked body", "[http]") {
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, chunked_head + testing::chunk(std::string(600, 'x')) +
                              testing::chunk(std::string(600, 'y')) + "0\r\n\r\n");
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = server.url("/big");
  req.max_body_bytes = 1000;
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  INFO(result->error);
  CHECK(result->error.find("exceeds 1000 bytes") != std::string::npos);
}

TEST_CASE("net::http_fetch reports a refused connection", "[http]") {
  unsigned short port = 0;
  {
    boost::asio::io_context probe;
    boost::asio::ip::tcp::acceptor a(probe, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  CHECK(result->error.find("connect 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(result->error.find("refused") != std::string::npos);
}

TEST_CASE("net::http_fetch refuses a URL it cannot speak and never calls back synchronously", "[http]") {
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = "ws://127.0.0.1/";
  net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  CHECK_FALSE(result.has_value());
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  CHECK(result->error == "not an http:// or https:// URL");
}

TEST_CASE("net::http_fetch completes after the caller drops its reference", "[http]") {
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, response("200 OK", "", "kept"));
  });
  boost::asio::io_context ioc;
  std::optional<net::http_result> result;
  net::http_request req;
  req.url = server.url("/");
  {
    auto call = net::http_fetch(ioc, req, [&](net::http_result r) { result = std::move(r); });
  }
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  CHECK(result->response.body == "kept");
}

TEST_CASE("net::http_open_stream delivers chunks before the server ends the stream", "[http]") {
  gate first_seen, second_seen;
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, chunked_head + testing::chunk("{\"a\":"));
    if (!first_seen.wait()) return;
    testing::write_all(s, testing::chunk("1}\n"));
    if (!second_seen.wait()) return;
    testing::write_all(s, "0\r\n\r\n");
  });
  boost::asio::io_context ioc;
  std::optional<net::http_response> head;
  std::string data;
  int pieces = 0;
  std::optional<std::string> ended;
  net::http_request req;
  req.url = server.url("/watch");
  net::http_stream_handlers h;
  h.head = [&](const net::http_response& r) { head = r; };
  h.data = [&](std::string_view d) {
    CHECK_FALSE(ended.has_value());
    data += d;
    ++pieces;
  };
  h.end = [&](std::string error) { ended = std::move(error); };
  auto call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return data == "{\"a\":"; }));
  REQUIRE(head.has_value());
  CHECK(head->status == 200);
  CHECK(head->header("content-type") == "application/json");
  CHECK_FALSE(ended.has_value());
  first_seen.open();
  REQUIRE(run_until(ioc, [&] { return data == "{\"a\":1}\n"; }));
  CHECK_FALSE(ended.has_value());
  second_seen.open();
  REQUIRE(run_until(ioc, [&] { return ended.has_value(); }));
  CHECK(*ended == "");
  CHECK(pieces == 2);
}

TEST_CASE("net::http_open_stream cancel closes the connection and stops callbacks", "[http]") {
  std::atomic<bool> server_saw_close{false};
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, chunked_head + testing::chunk("one"));
    testing::wait_for_close(s);
    server_saw_close = true;
  });
  boost::asio::io_context ioc;
  int data_calls = 0;
  int end_calls = 0;
  std::shared_ptr<net::http_call> call;
  net::http_request req;
  req.url = server.url("/watch");
  net::http_stream_handlers h;
  h.data = [&](std::string_view) {
    ++data_calls;
    call->cancel();  // from inside a callback, as connectors do
  };
  h.end = [&](std::string) { ++end_calls; };
  call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return data_calls == 1; }));
  REQUIRE(run_until(ioc, [&] { return server_saw_close.load(); }));
  ioc.restart();
  ioc.run_for(50ms);
  CHECK(data_calls == 1);
  CHECK(end_calls == 0);
}

TEST_CASE("net::http_open_stream cancel before the head arrives", "[http]") {
  gate respond;
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    respond.wait();
    testing::write_all(s, chunked_head + testing::chunk("late"));
  });
  boost::asio::io_context ioc;
  int calls = 0;
  net::http_request req;
  req.url = server.url("/watch");
  net::http_stream_handlers h;
  h.head = [&](const net::http_response&) { ++calls; };
  h.data = [&](std::string_view) { ++calls; };
  h.end = [&](std::string) { ++calls; };
  auto call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return server.accepted() == 1; }));
  call->cancel();
  call.reset();
  respond.open();
  ioc.restart();
  ioc.run_for(100ms);
  CHECK(calls == 0);
}

TEST_CASE("net::http_open_stream ends with an error on idle timeout", "[http]") {
  gate release;
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, chunked_head);
    release.wait();
  });
  boost::asio::io_context ioc;
  std::optional<std::string> ended;
  bool got_head = false;
  net::http_request req;
  req.url = server.url("/watch");
  req.idle_timeout = 200ms;
  net::http_stream_handlers h;
  h.head = [&](const net::http_response&) { got_head = true; };
  h.end = [&](std::string error) { ended = std::move(error); };
  auto call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return ended.has_value(); }));
  CHECK(got_head);
  CHECK(ended->find("no data for 200 ms") != std::string::npos);
  release.open();
}

TEST_CASE("net::http_open_stream reports a refused connection through end only", "[http]") {
  unsigned short port = 0;
  {
    boost::asio::io_context probe;
    boost::asio::ip::tcp::acceptor a(probe, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  boost::asio::io_context ioc;
  std::optional<std::string> ended;
  bool got_head = false;
  net::http_request req;
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  net::http_stream_handlers h;
  h.head = [&](const net::http_response&) { got_head = true; };
  h.end = [&](std::string error) { ended = std::move(error); };
  auto call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return ended.has_value(); }));
  CHECK_FALSE(got_head);
  CHECK(ended->find("refused") != std::string::npos);
}

TEST_CASE("net::http_open_stream delivers a Content-Length body and a 404 head", "[http]") {
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, response("404 Not Found", "", "missing"));
  });
  boost::asio::io_context ioc;
  std::optional<net::http_response> head;
  std::string data;
  std::optional<std::string> ended;
  net::http_request req;
  req.url = server.url("/x");
  net::http_stream_handlers h;
  h.head = [&](const net::http_response& r) { head = r; };
  h.data = [&](std::string_view d) { data += d; };
  h.end = [&](std::string error) { ended = std::move(error); };
  auto call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return ended.has_value(); }));
  INFO(*ended);
  REQUIRE(head.has_value());
  CHECK(head->status == 404);
  CHECK(data == "missing");
  CHECK(*ended == "");
}

}  // namespace tidings::net

namespace tidings::net {

TEST_CASE("net::http_open_stream reads a body delimited by the connection's close", "[http]") {
  gate more;
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\n");
    if (!more.wait()) return;
    testing::write_all(s, "data: 2\n\n");
  });
  boost::asio::io_context ioc;
  std::string data;
  std::optional<std::string> ended;
  net::http_request req;
  req.url = server.url("/events");
  net::http_stream_handlers h;
  h.data = [&](std::string_view d) { data += d; };
  h.end = [&](std::string error) { ended = std::move(error); };
  auto call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return data == "data: 1\n\n"; }));
  more.open();
  REQUIRE(run_until(ioc, [&] { return ended.has_value(); }));
  CHECK(data == "data: 1\n\ndata: 2\n\n");
  CHECK(*ended == "");
}

TEST_CASE("net::http_open_stream cancel from the head callback", "[http]") {
  std::atomic<bool> server_saw_close{false};
  loopback_server server([&](tcp_socket& s) {
    testing::read_request(s);
    testing::write_all(s, chunked_head + testing::chunk("body"));
    testing::wait_for_close(s);
    server_saw_close = true;
  });
  boost::asio::io_context ioc;
  int heads = 0, others = 0;
  std::shared_ptr<net::http_call> call;
  net::http_request req;
  req.url = server.url("/watch");
  net::http_stream_handlers h;
  h.head = [&](const net::http_response&) {
    ++heads;
    call->cancel();
    call.reset();  // dropping the last outside reference inside a callback is fine
  };
  h.data = [&](std::string_view) { ++others; };
  h.end = [&](std::string) { ++others; };
  call = net::http_open_stream(ioc, req, h);
  REQUIRE(run_until(ioc, [&] { return server_saw_close.load(); }));
  ioc.restart();
  ioc.run_for(50ms);
  CHECK(heads == 1);
  CHECK(others == 0);
}

}  // namespace tidings::net
