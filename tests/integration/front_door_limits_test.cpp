// The front door against hostile clients: a header dribbled byte by byte
// (slowloris), a connection that says nothing, too many header fields, and
// more connections than one address or the node may hold. Every wait is a
// bounded read or a bounded retry; nothing sleeps.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

// A TCP client the test drives byte by byte: it sends exactly what it is told
// and reads only inside read(), each read bounded by poll().
class raw_client {
 public:
  enum class end { done, closed, timeout };

  explicit raw_client(const client::endpoint& ep) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(ep.port);
    if (::inet_pton(AF_INET, ep.host.c_str(), &addr.sin_addr) != 1 ||
        ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      auto err = std::string("connect: ") + std::strerror(errno);
      ::close(fd_);
      throw std::runtime_error(err);
    }
  }
  ~raw_client() { ::close(fd_); }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  // False once the server has closed the connection.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Appends to `into` until `done(into)` holds, the server closes (or resets)
  // the connection, or `timeout` passes.
  end read(std::string& into, std::chrono::milliseconds timeout,
           const std::function<bool(const std::string&)>& done = {}) {
    const auto deadline = clock_type::now() + timeout;
    for (;;) {
      if (done && done(into)) return end::done;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
      if (left.count() <= 0) return end::timeout;
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return end::timeout;
      char buf[4096];
      auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return end::closed;
      into.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

// True once `bytes` holds a whole response with a Content-Length body.
bool complete_response(const std::string& bytes) {
  auto head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) return false;
  auto at = bytes.find("Content-Length: ");
  if (at == std::string::npos || at > head_end) return true;
  auto length = std::stoul(bytes.substr(at + 16));
  return bytes.size() >= head_end + 4 + length;
}

std::chrono::milliseconds since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t);
}

std::string header(const client::http_response& r, const std::string& lower_name) {
  auto it = r.headers.find(lower_name);
  return it == r.headers.end() ? std::string() : it->second;
}

// The 429 a connection past a limit gets, as the HTTP client reads it.
void check_refused(const client::http_response& r, const std::string& message) {
  INFO("status " << r.status << ", body " << r.body);
  CHECK(r.status == 429);
  CHECK(header(r, "content-type") == "application/json");
  CHECK(header(r, "connection") == "close");
  CHECK(header(r, "retry-after") == "1");
  CHECK(json::parse(r.body, nullptr, false) == json{{"error", message}});
}

// A keep-alive connection the node has served once. A place given back by a
// closed connection is given back asynchronously, so a 429 is retried until
// `timeout`.
std::unique_ptr<client::http_connection> await_admitted(const client::endpoint& ep,
                                                        std::chrono::milliseconds timeout = 5s) {
  const auto deadline = clock_type::now() + timeout;
  for (;;) {
    auto conn = std::make_unique<client::http_connection>(ep);
    auto r = conn->request("GET", "/healthz");
    if (r.status == 200) return conn;
    if (r.status != 429 || clock_type::now() > deadline)
      throw std::runtime_error("not admitted: " + std::to_string(r.status) + " " + r.body);
  }
}

// "GET /healthz" with `fields` header fields in all, the last Connection: close.
std::string request_with_fields(int fields) {
  std::string raw = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 2; i < fields; ++i) raw += "X-F" + std::to_string(i) + ": v\r\n";
  return raw + "Connection: close\r\n\r\n";
}

}  // namespace

TEST_CASE("the front door closes slow and idle connections and bounds header fields", "[front-door]") {
  temp_dir dir;
  const auto header_timeout = 300ms;
  const auto idle_timeout = 1000ms;
  tidingsd_process node(dir.path(), {"--header-timeout-ms", std::to_string(header_timeout.count()),
                                     "--idle-timeout-ms", std::to_string(idle_timeout.count())});
  auto ep = node.endpoint();

  // One node for the three: a client dribbling its header is cut off while
  // others are served.
  {
    raw_client slow(ep);
    const std::string line = "X-Slow: ";
    const auto started = clock_type::now();
    REQUIRE(slow.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    std::string got;
    bool closed = false;
    int dribbled = 0;
    // One header byte every 100 ms, each time waiting those 100 ms for the
    // node to hang up; the header never ends.
    while (!closed && since(started) < 5s) {
      auto byte = dribbled < static_cast<int>(line.size()) ? line[dribbled] : 'a';
      if (!slow.send(std::string(1, byte))) break;
      ++dribbled;
      closed = slow.read(got, 100ms) == raw_client::end::closed;
      if (dribbled == 2) CHECK(client::request(ep, "GET", "/healthz").status == 200);
    }
    auto elapsed = since(started);
    INFO("dribbled " << dribbled << " bytes over " << elapsed.count() << " ms");
    CHECK(dribbled >= 2);
    CHECK(elapsed >= header_timeout);
    CHECK(elapsed < 5s);
    CHECK(got.empty());
    CHECK(client::request(ep, "GET", "/healthz").status == 200);
  }

  // A connection that sends nothing, or nothing after its first request, is
  // closed after the idle timeout.
  {
    const auto started = clock_type::now();
    raw_client silent(ep);
    raw_client kept(ep);
    REQUIRE(kept.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    std::string reply;
    REQUIRE(kept.read(reply, 5s, complete_response) == raw_client::end::done);
    CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);

    // The node's clocks start after `started`, so neither closes before it.
    std::string after;
    CHECK(silent.read(after, 10s) == raw_client::end::closed);
    CHECK(since(started) >= idle_timeout);
    CHECK(kept.read(after, 10s) == raw_client::end::closed);
    CHECK(since(started) >= idle_timeout);
    CHECK(after.empty());
  }

  // More than 100 header fields get 431 naming the limit.
  {
    auto reply = client::raw_exchange(ep, request_with_fields(100), 5s);
    CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);

    reply = client::raw_exchange(ep, request_with_fields(101), 5s);
    INFO(reply);
    CHECK(reply.rfind("HTTP/1.1 431", 0) == 0);
    CHECK(reply.find("Connection: close") != std::string::npos);
    auto body = json::parse(reply.substr(reply.find("\r\n\r\n") + 4), nullptr, false);
    REQUIRE(body.is_object());
    CHECK(body["error"] == "header block over the limit of 100 fields");
  }
}

TEST_CASE("connections past --max-connections-per-address get 429, SSE sessions included", "[front-door]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--max-connections-per-address", "3"});
  auto ep = node.endpoint();
  const std::string message = "too many connections from this address (limit 3)";

  {
    std::vector<std::unique_ptr<client::sse_stream>> sessions;
    for (int i = 0; i < 3; ++i) {
      sessions.push_back(std::make_unique<client::sse_stream>(ep, sse_target({"x"})));
      await_hello(*sessions.back());
    }
    check_refused(client::request(ep, "GET", "/healthz"), message);
  }

  // The sessions' places come back once the node has seen them go.
  std::vector<std::unique_ptr<client::http_connection>> open;
  for (int i = 0; i < 3; ++i) open.push_back(await_admitted(ep));
  check_refused(client::request(ep, "GET", "/healthz"), message);

  // The 429 comes without a request being read, and is not counted.
  raw_client unread(ep);
  std::string reply;
  REQUIRE(unread.read(reply, 5s) == raw_client::end::closed);
  INFO(reply);
  CHECK(reply.rfind("HTTP/1.1 429", 0) == 0);
  CHECK(reply.find("Retry-After: 1\r\n") != std::string::npos);
  CHECK(json::parse(reply.substr(reply.find("\r\n\r\n") + 4), nullptr, false) == json{{"error", message}});

  // A closed connection's place goes to the next one, and only to it.
  open.erase(open.begin());
  open.push_back(await_admitted(ep));
  check_refused(client::request(ep, "GET", "/healthz"), message);
  for (auto& conn : open) CHECK(conn->request("GET", "/healthz").status == 200);
}

TEST_CASE("connections past --max-connections get 429 naming the node's limit, logged once a burst",
          "[front-door]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--max-connections", "2"});
  auto ep = node.endpoint();
  const std::string message = "too many connections on this node (limit 2)";

  std::vector<std::unique_ptr<client::http_connection>> open;
  for (int i = 0; i < 2; ++i) open.push_back(await_admitted(ep));
  const auto burst = clock_type::now();
  const int refusals = 20;
  for (int i = 0; i < refusals; ++i) check_refused(client::request(ep, "GET", "/healthz"), message);
  const auto burst_ms = since(burst).count();

  REQUIRE(node.await_log("http.connection_refused", 5s));
  std::string log = node.log();
  long lines = 0;
  for (auto at = log.find("http.connection_refused"); at != std::string::npos;
       at = log.find("http.connection_refused", at + 1))
    ++lines;
  INFO(log);
  // The first refusal is logged, then at most one line a second.
  CHECK(lines >= 1);
  CHECK(lines <= 1 + burst_ms / 1000);

  open.erase(open.begin());
  open.push_back(await_admitted(ep));
  check_refused(client::request(ep, "GET", "/healthz"), message);
}
