#include "tests/support/tls_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <openssl/err.h>
#include <openssl/x509v3.h>

namespace tidings::testing {

namespace {

std::string openssl_error() {
  char buf[256];
  auto code = ERR_get_error();
  if (code == 0) return "no OpenSSL error";
  ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

}  // namespace

int poll_timeout_ms(std::chrono::steady_clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

tls_client::tls_client(std::uint16_t port, const tls_client_options& options,
                       std::chrono::milliseconds timeout) {
  auto fail = [this](const std::string& what) {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
    ssl_ = nullptr;
    ctx_ = nullptr;
    fd_ = -1;
    throw std::runtime_error(what);
  };
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail(std::string("socket: ") + std::strerror(errno));
  // Every blocking read and write is bounded: a server that never answers fails the test, not hangs it.
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail(std::string("connect: ") + std::strerror(errno));
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (options.min_version) SSL_CTX_set_min_proto_version(ctx_, options.min_version);
  if (options.max_version) {
    SSL_CTX_set_max_proto_version(ctx_, options.max_version);
    // OpenSSL 3 refuses TLS 1.1 at its default security level: lower it so
    // the offer is really made, and the server is the one refusing.
    if (options.max_version < TLS1_2_VERSION) SSL_CTX_set_security_level(ctx_, 0);
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(ctx_, options.ca_file.c_str(), nullptr) != 1)
    fail("ca_file " + options.ca_file + ": " + openssl_error());
  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  SSL_set_tlsext_host_name(ssl_, options.server_name.c_str());
  SSL_set1_host(ssl_, options.server_name.c_str());
  if (options.resume) SSL_set_session(ssl_, options.resume);
  if (SSL_connect(ssl_) != 1) {
    auto verify = SSL_get_verify_result(ssl_);
    auto why = openssl_error();
    if (verify != X509_V_OK) why += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
    fail("TLS handshake with 127.0.0.1:" + std::to_string(port) + " failed: " + why);
  }
}

tls_client::~tls_client() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

void tls_client::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
    if (n <= 0) throw std::runtime_error("TLS write failed: " + openssl_error());
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

bool tls_client::read_some(std::chrono::steady_clock::time_point deadline, std::string& into, bool& eof) {
  // Bytes OpenSSL decrypted already are not readable on the socket.
  if (SSL_pending(ssl_) == 0) {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, poll_timeout_ms(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return false;
      break;
    }
  }
  char buf[16384];
  int n = SSL_read(ssl_, buf, sizeof buf);
  if (n <= 0) {
    // A record that only carried a session ticket: nothing for the caller yet.
    if (SSL_get_error(ssl_, n) == SSL_ERROR_WANT_READ) return read_some(deadline, into, eof);
    eof = true;
    return true;
  }
  into.append(buf, static_cast<std::size_t>(n));
  return true;
}

std::string tls_client::peer_subject() const {
  X509* cert = SSL_get1_peer_certificate(ssl_);
  if (!cert) return {};
  char buf[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof buf);
  X509_free(cert);
  std::string s = buf;
  return s.starts_with('/') ? s.substr(1) : s;
}

bool tls_client::session_reused() const {
  return SSL_session_reused(ssl_) == 1;
}

SSL_SESSION* tls_client::take_session() const {
  return SSL_get1_session(ssl_);
}

void tls_client::reset() {
  if (fd_ < 0) return;
  linger abort{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd_);
  fd_ = -1;
}

tls_response tls_request(std::uint16_t port, const tls_client_options& options, const std::string& method,
                         const std::string& target, const std::string& body,
                         const std::string& extra_headers) {
  tls_client c(port, options);
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: " + options.server_name + ":" +
                    std::to_string(port) + "\r\nConnection: close\r\n" + extra_headers;
  if (!body.empty())
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  c.write_all(req);
  std::string all;
  bool eof = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!eof)
    if (!c.read_some(deadline, all, eof))
      throw std::runtime_error("no complete response within 10 s: " + all);
  tls_response out;
  auto end = all.find("\r\n\r\n");
  if (end == std::string::npos) throw std::runtime_error("no response header in: " + all);
  out.head = all.substr(0, end);
  out.body = all.substr(end + 4);
  if (out.head.size() > 12) out.status = std::stoi(out.head.substr(9, 3));
  return out;
}

}  // namespace tidings::testing
