#pragma once

// A blocking TLS client of the tests' own (OpenSSL on a plain socket), for
// talking to tidingsd's HTTPS port the way a browser or curl would: the
// server's certificate verified against the test's CA and the name asked
// for. The handshake's failure throws with OpenSSL's reason.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <openssl/ssl.h>

namespace tidings::testing {

// poll(2)'s timeout until `deadline`: milliseconds left, 0 once it passed.
int poll_timeout_ms(std::chrono::steady_clock::time_point deadline);

struct tls_client_options {
  std::string ca_file;                    // the CA the server's certificate must chain to
  std::string server_name = "localhost";  // SNI and the name verified
  int max_version = 0;                    // e.g. TLS1_1_VERSION to offer only old ones; 0: no cap
  int min_version = 0;                    // 0: OpenSSL's default
  SSL_SESSION* resume = nullptr;          // a session to resume (not owned)
};

class tls_client {
 public:
  tls_client(std::uint16_t port, const tls_client_options& options,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~tls_client();
  tls_client(const tls_client&) = delete;
  tls_client& operator=(const tls_client&) = delete;

  void write_all(std::string_view bytes);
  // Reads what arrives before `deadline`; false on timeout. At the end of
  // the stream (or an error) sets `eof` and returns true.
  bool read_some(std::chrono::steady_clock::time_point deadline, std::string& into, bool& eof);
  // The server certificate's subject, "CN=...".
  std::string peer_subject() const;
  bool session_reused() const;
  // The session to resume on a later connection (owned by the caller: SSL_SESSION_free).
  SSL_SESSION* take_session() const;
  // Ends the connection with a TCP reset (SO_LINGER 0), as a client that
  // crashed or lost its network does: the server's next write fails.
  void reset();

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

struct tls_response {
  int status = 0;
  std::string head;  // status line and header fields
  std::string body;  // the body as sent (Content-Length framing, or up to the close)
};

// One request on a fresh connection ("Connection: close"), read to its end.
tls_response tls_request(std::uint16_t port, const tls_client_options& options, const std::string& method,
                         const std::string& target, const std::string& body = {},
                         const std::string& extra_headers = {});

}  // namespace tidings::testing
