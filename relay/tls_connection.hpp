#pragma once

// An HTTPS connection, handed by the front door to an SSE session once its
// request is read: the TLS stream, and the server context it was accepted
// with, which it keeps however many certificate reloads come after.
//
// Beast's ssl_stream rather than Asio's: it copies a write's many small
// buffers (one per frame) into one before encrypting, so a write is a few
// full TLS records instead of one record per frame.

#include <array>
#include <memory>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace tidings::relay {

using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

struct tls_connection {
  tls_connection(std::shared_ptr<boost::asio::ssl::context> ctx, tls_stream s)
      : context(std::move(ctx)), stream(std::move(s)) {}

  std::shared_ptr<boost::asio::ssl::context> context;
  tls_stream stream;
  // Where the session reads what a client sends after its request (it
  // says nothing on an SSE connection; reading tells us it hung up).
  std::array<char, 256> read_buffer{};
};

}  // namespace tidings::relay
