// The HTTPS listener (issue 24) through the real tidingsd: a client that
// verifies the node's certificate (made by the test's own CA) publishes and
// reads, an SSE session over TLS resumes with Last-Event-ID, TLS 1.1 and
// plain HTTP at the HTTPS port are refused with their reasons, and SIGHUP
// with a renewed certificate keeps the sessions that are open while new
// connections get the new one (a broken renewal keeps the old, and says so).

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/raw_sse_session.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/tls_client.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The HTTPS port, from the node's `node.listening` line.
std::uint16_t tls_port_of(const tidingsd_process& node) {
  std::smatch m;
  auto log = node.log();
  REQUIRE(std::regex_search(log, m, std::regex(R"re("tls_address":"127\.0\.0\.1:(\d+)")re")));
  return static_cast<std::uint16_t>(std::stoul(m[1].str()));
}

std::vector<std::string> tls_flags(const pem_files& leaf) {
  return {"--tls-listen", "127.0.0.1:0", "--tls-cert", leaf.cert, "--tls-key", leaf.key};
}

// The next data event's id (skipping hello, retry and heartbeats).
std::string next_event_id(raw_sse_session& s) {
  core::sse_message m;
  for (;;) {
    auto got = s.next(m, 10s);
    REQUIRE(got == raw_sse_session::result::message);
    if (m.event.empty() && m.id) return *m.id;
  }
}

// An SSE session over TLS on stream docs, once its hello says it is subscribed.
std::unique_ptr<raw_sse_session> open_session(std::uint16_t port, const tls_client_options& tls,
                                              const std::string& headers = {}) {
  auto s = std::make_unique<raw_sse_session>(std::make_unique<tls_client>(port, tls), "/v1/sse?stream=docs",
                                             headers, 10s);
  core::sse_message m;
  do {
    REQUIRE(s->next(m, 10s) == raw_sse_session::result::message);
  } while (m.event != "hello");
  return s;
}

// Connects to the port, says nothing, and waits (at most 10 s) for the
// node to close: true when it did.
bool closed_when_silent(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  bool closed = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    pollfd p{fd, POLLIN, 0};
    char byte = 0;
    closed = ::poll(&p, 1, 10000) == 1 && ::recv(fd, &byte, 1, 0) <= 0;
  }
  ::close(fd);
  return closed;
}

}  // namespace

TEST_CASE("the HTTPS port: its certificate verified, TLS 1.2 and later only, SSE resumed with Last-Event-ID",
          "[integration][tls]") {
  temp_dir dir;
  test_ca ca(dir.path().string(), "node");
  const auto leaf = ca.issue("node", {"localhost", {"DNS:localhost", "IP:127.0.0.1"}});
  auto flags = tls_flags(leaf);
  flags.insert(flags.end(), {"--header-timeout-ms", "1000"});
  tidingsd_process node(dir.path() / "data", flags);
  const auto port = tls_port_of(node);
  const tls_client_options tls{ca.files().cert};

  // A client that never starts its handshake is cut off at the header deadline.
  CHECK(closed_when_silent(port));
  auto health = tls_request(port, tls, "GET", "/healthz");
  CHECK(health.status == 200);
  auto published = tls_request(port, tls, "POST", "/v1/streams/docs/events",
                               R"([{"path":"/a","data":1},{"path":"/b","data":2}])");
  REQUIRE(published.status == 201);
  auto cursors = json::parse(published.body)["cursors"];
  REQUIRE(cursors.size() == 2);

  // Resumed after the first: the second, then what is published next (over plain HTTP).
  auto session = open_session(port, tls, "Last-Event-ID: " + cursors[0].get<std::string>() + "\r\n");
  CHECK(next_event_id(*session) == cursors[1]);
  auto third = publish(node.endpoint(), "docs", event_json("/c", "MODIFIED", 3));
  CHECK(next_event_id(*session) == third);

  // Only TLS 1.2 and later are spoken.
  tls_client_options old = tls;
  old.max_version = TLS1_1_VERSION;
  CHECK_THROWS_WITH(tls_client(port, old), Catch::Contains("TLS handshake") && Catch::Contains("version"));
  // A client that trusts another CA refuses the node's certificate.
  test_ca stranger(dir.path().string(), "stranger");
  CHECK_THROWS_WITH(tls_client(port, {stranger.files().cert}), Catch::Contains("certificate verify failed"));
  // Plain HTTP at the HTTPS port is told what to do instead.
  auto plain = client::raw_exchange({"127.0.0.1", port}, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
  CHECK(plain.starts_with("HTTP/1.1 400"));
  CHECK(plain.find("this port serves HTTPS only") != std::string::npos);
  // A client that vanishes (a TCP reset) while the node writes to it ends
  // its session, not the node (the write fails; tidingsd also ignores
  // SIGPIPE, which a write racing a peer's close could raise).
  {
    tls_client gone(port, tls);
    gone.write_all("GET /v1/sse?stream=docs HTTP/1.1\r\nHost: localhost\r\n\r\n");
    std::string got;
    bool eof = false;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (got.find("event: hello") == std::string::npos && !eof) REQUIRE(gone.read_some(deadline, got, eof));
    gone.reset();
  }
  for (int i = 0; i < 20; ++i) publish(node.endpoint(), "docs", event_json("/gone", "MODIFIED", i));
  CHECK(next_event_id(*session) != "");  // the other session goes on
  // The plain port still serves.
  CHECK(client::request(node.endpoint(), "GET", "/healthz").status == 200);
  CHECK(tls_request(port, tls, "GET", "/healthz").status == 200);
}

TEST_CASE("SIGHUP with a renewed certificate keeps open HTTPS sessions, and a broken one keeps the old",
          "[integration][tls]") {
  temp_dir dir;
  test_ca ca(dir.path().string(), "node");
  const auto first = ca.issue("node", {"node-v1", {"DNS:localhost"}});
  tidingsd_process node(dir.path() / "data", tls_flags(first));
  const auto port = tls_port_of(node);
  const tls_client_options tls{ca.files().cert};
  CHECK(tls_client(port, tls).peer_subject() == "CN=node-v1");

  auto session = open_session(port, tls);
  // Renewed in place, as certbot does, then SIGHUP.
  const auto renewed = ca.issue("node", {"node-v2", {"DNS:localhost"}});
  REQUIRE(renewed.cert == first.cert);
  ::kill(node.pid(), SIGHUP);
  REQUIRE(node.await_log("CN=node-v2", 10s));
  CHECK(tls_client(port, tls).peer_subject() == "CN=node-v2");
  // The session accepted with the old certificate is still served.
  auto cursor = publish(node.endpoint(), "docs", event_json("/a", "MODIFIED", 1));
  CHECK(next_event_id(*session) == cursor);

  // A renewal whose key is broken: the reload fails naming the file, and
  // the certificate in use stays.
  { std::ofstream(renewed.key) << "not a key\n"; }
  auto reload = client::request(node.endpoint(), "POST", "/admin/v1/reload", "{}");
  CHECK(reload.status == 400);
  CHECK(reload.body.find("tls-key " + renewed.key) != std::string::npos);
  CHECK(tls_client(port, tls).peer_subject() == "CN=node-v2");
  cursor = publish(node.endpoint(), "docs", event_json("/b", "MODIFIED", 2));
  CHECK(next_event_id(*session) == cursor);
}
