#pragma once

// HTTPS for the load client's SSE sessions (--tls-port): one client context
// for all of them, and per session the TLS session its last connection got,
// offered again when it reconnects (--tls-resume on), so a reconnect storm
// can be measured with resumption and without. The client verifies nothing:
// it measures the server's cost on loopback, not a real peer's trust.

#include <cstddef>
#include <memory>
#include <vector>

#include <openssl/ssl.h>
#include <boost/asio/ssl/context.hpp>

namespace tidings::load {

class tls_sessions {
 public:
  tls_sessions(std::size_t sessions, bool resume);
  ~tls_sessions();
  tls_sessions(const tls_sessions&) = delete;
  tls_sessions& operator=(const tls_sessions&) = delete;

  boost::asio::ssl::context& context() { return context_; }
  // Before session s's handshake: offers its last session when resuming.
  void prepare(std::size_t s, SSL* ssl);
  // Once its stream has begun (TLS 1.3 tickets come after the handshake):
  // keeps its session for the next connection and counts how it was made.
  void established(std::size_t s, SSL* ssl);

  std::size_t resumed() const { return resumed_; }
  std::size_t full() const { return full_; }

 private:
  boost::asio::ssl::context context_;
  bool resume_;
  std::vector<SSL_SESSION*> kept_;
  std::size_t resumed_ = 0;
  std::size_t full_ = 0;
};

}  // namespace tidings::load
