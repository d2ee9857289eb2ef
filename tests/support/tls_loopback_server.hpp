#pragma once

// loopback_server behind TLS (issue 24's client tests): accepts on
// 127.0.0.1 port 0, completes a server handshake with the given
// certificate (and, when client_ca is set, requires a client certificate
// it signed), then runs the script on the TLS stream. A handshake the
// client refused or failed is recorded, and the script does not run.

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "tests/support/loopback_server.hpp"
#include "tests/support/test_pki.hpp"

namespace tidings::testing {

using tls_socket = boost::asio::ssl::stream<tcp_socket&>;

// What the server learnt of one handshake.
struct tls_handshake_seen {
  std::string error;        // "" when it completed
  std::string server_name;  // SNI sent by the client, "" without
  std::string client_cn;    // the client certificate's common name, "" without
};

class tls_loopback_server {
 public:
  using script = std::function<void(tls_socket&)>;
  tls_loopback_server(const pem_files& server, script s, const std::string& client_ca = "");

  unsigned short port() const { return server_.port(); }
  // https://<host>:<port><target>; host "localhost" or "127.0.0.1".
  std::string url(const std::string& host, const std::string& target) const;
  std::vector<tls_handshake_seen> handshakes() const;

 private:
  void serve(tcp_socket& socket);

  boost::asio::ssl::context context_;
  script script_;
  mutable std::mutex mutex_;
  std::vector<tls_handshake_seen> seen_;
  loopback_server server_;  // last: its threads use the members above
};

// Errors are ignored, as with write_all on a socket.
void write_all(tls_socket& s, const std::string& bytes);

}  // namespace tidings::testing
