#pragma once

// An HTTPS connection, handed by the front door to an SSE session once its
// request is read: the TLS socket (which keeps the server context it was
// accepted with, however many certificate reloads come after), and the few
// bytes the session reads into to learn that the client hung up.

#include <array>

#include "relay/tls_socket.hpp"

namespace tidings::relay {

struct tls_connection {
  explicit tls_connection(tls_socket s) : stream(std::move(s)) {}

  tls_socket stream;
  // The client says nothing on an SSE connection: a read that ends says it left.
  std::array<char, 64> read_buffer{};
};

}  // namespace tidings::relay
