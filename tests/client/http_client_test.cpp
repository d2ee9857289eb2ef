#include "client/http_client.hpp"

#include <catch2/catch.hpp>

#include "tests/support/loopback_server.hpp"

using namespace tidings::client;
using namespace tidings::testing;
using namespace std::chrono_literals;

namespace {

std::string ok_response(const std::string& body, const std::string& extra_headers = {}) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

// The request line and body of a raw request, as the echo scripts return them.
std::string echo_of(const std::string& request) {
  const auto line = request.substr(0, request.find("\r\n"));
  const auto body = request.substr(request.find("\r\n\r\n") + 4);
  return line + "|" + body;
}

}  // namespace

TEST_CASE("parse_endpoint accepts HOST:PORT, PORT and http://HOST:PORT", "[client]") {
  auto ep = parse_endpoint("127.0.0.1:9000");
  CHECK(ep.host == "127.0.0.1");
  CHECK(ep.port == 9000);

  ep = parse_endpoint("9001");
  CHECK(ep.host == "127.0.0.1");
  CHECK(ep.port == 9001);

  ep = parse_endpoint("http://localhost:81");
  CHECK(ep.host == "localhost");
  CHECK(ep.port == 81);

  ep = parse_endpoint("http://node.example:8080/ignored/path");
  CHECK(ep.host == "node.example");
  CHECK(ep.port == 8080);

  ep = parse_endpoint("[::1]:8080");
  CHECK(ep.host == "::1");
  CHECK(ep.port == 8080);
}

TEST_CASE("parse_endpoint refuses malformed endpoints", "[client]") {
  for (const char* bad : {"", "host", "host:", ":80", "host:0", "host:65536", "host:8o", "http://",
                          "http://:80", "[::1", "a b:80", "99999999"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_endpoint(bad), std::invalid_argument);
  }
}

TEST_CASE("url_encode keeps unreserved characters and escapes the rest", "[client]") {
  CHECK(url_encode("docs") == "docs");
  CHECK(url_encode("a-b.c_d~e09") == "a-b.c_d~e09");
  CHECK(url_encode("docs:/a b") == "docs%3A%2Fa%20b");
  CHECK(url_encode("x&y=z+%") == "x%26y%3Dz%2B%25");
  CHECK(url_encode("\xC3\xA9") == "%C3%A9");
  CHECK(url_encode("") == "");
}

TEST_CASE("http_connection reuses one keep-alive connection", "[client]") {
  loopback_server server([](tcp_socket& s) {
    for (;;) {
      const auto req = read_request(s);
      if (req.empty()) return;
      write_all(s, ok_response(echo_of(req)));
    }
  });
  {
    http_connection conn(server.address(), 5s);
    const auto a = conn.request("GET", "/one");
    const auto b = conn.request("POST", "/two", "{\"x\":1}");
    const auto c = conn.request("DELETE", "/three");
    CHECK(a.status == 200);
    CHECK(a.body == "GET /one HTTP/1.1|");
    CHECK(b.body == "POST /two HTTP/1.1|{\"x\":1}");
    CHECK(c.body == "DELETE /three HTTP/1.1|");
    CHECK(a.headers.at("content-type") == "application/json");
  }
  CHECK(server.accepted() == 1);
}

TEST_CASE("http_connection reconnects after the server closes the connection", "[client]") {
  loopback_server server([](tcp_socket& s) {
    const auto req = read_request(s);
    if (!req.empty()) write_all(s, ok_response(echo_of(req), "Connection: close\r\n"));
  });
  {
    http_connection conn(server.address(), 5s);
    CHECK(conn.request("GET", "/a").body == "GET /a HTTP/1.1|");
    CHECK(conn.request("GET", "/b").body == "GET /b HTTP/1.1|");
  }
  CHECK(server.accepted() == 2);
}

TEST_CASE("an error status is a response, not an exception", "[client]") {
  loopback_server server([](tcp_socket& s) {
    read_request(s);
    const std::string body = R"({"error":"bad stream name"})";
    write_all(s,
              "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nX-Extra: 1\r\n"
              "Content-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  const auto res = request(server.address(), "POST", "/v1/streams/BAD/events", "{}", {}, 5s);
  CHECK(res.status == 400);
  CHECK(res.body == R"({"error":"bad stream name"})");
  CHECK(res.headers.at("x-extra") == "1");
}

TEST_CASE("request headers are sent as given", "[client]") {
  std::string seen;
  loopback_server server([&seen](tcp_socket& s) {
    seen = read_request(s);
    write_all(s, ok_response("{}"));
  });
  request(server.address(), "POST", "/p", "[]", {{"Idempotency-Key", "k-1"}}, 5s);
  CHECK(seen.find("Idempotency-Key: k-1\r\n") != std::string::npos);
  CHECK(seen.find("Content-Type: application/json\r\n") != std::string::npos);
  CHECK(seen.find("Content-Length: 2\r\n") != std::string::npos);
}

TEST_CASE("a server that never answers gives transport_error within the timeout", "[client]") {
  loopback_server server([](tcp_socket& s) {
    read_request(s);
    wait_for_close(s);
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(request(server.address(), "GET", "/", {}, {}, 200ms), transport_error);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("connecting to a closed port gives transport_error", "[client]") {
  endpoint closed;
  {
    // Bind and release a port so that nothing listens there.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor probe(
        ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    closed.port = probe.local_endpoint().port();
  }
  CHECK_THROWS_AS(request(closed, "GET", "/", {}, {}, 2s), transport_error);
}

TEST_CASE("raw_exchange returns what the server sent until it closed", "[client]") {
  loopback_server server([](tcp_socket& s) {
    read_request(s);
    write_all(s, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  });
  const auto got = raw_exchange(server.address(), "GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n", 5s);
  CHECK(got == "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST_CASE("raw_exchange returns what arrived when the timeout ends it", "[client]") {
  loopback_server server([](tcp_socket& s) {
    read_request(s);
    write_all(s, "HTTP/1.1 200 OK\r\n");
    wait_for_close(s);
  });
  CHECK(raw_exchange(server.address(), "GET / HTTP/1.1\r\n\r\n", 200ms) == "HTTP/1.1 200 OK\r\n");
}
