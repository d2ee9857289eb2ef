// OpenSSL reads the calling thread's error queue to explain a failed or
// blocked TLS call (SSL_get_error), so the queue must be empty before each
// call. CAF 0.17.6's OpenSSL module (the cluster's mutual TLS, ADR 0032)
// never empties it: after one failed handshake on its multiplexer thread (a
// port scan, plain BASP, a certificate of another CA), the next healthy
// connection whose read would block is taken for a broken one and closed,
// and every member link of the node drops. These definitions take the place
// of libssl's for the whole process (the executable's symbols come first;
// libcaf_openssl calls through the same names) and empty the queue before
// each call, as OpenSSL requires. For our own TLS code they change nothing:
// it empties the queue itself.

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <cstdlib>

namespace {

template <class Fn>
Fn next(const char* name) {
  auto* f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
  if (!f) {
    std::fprintf(stderr, "tidingsd: libssl has no %s\n", name);
    std::abort();
  }
  return f;
}

}  // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto real = next<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto real = next<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_accept(SSL* ssl) {
  static const auto real = next<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

int SSL_connect(SSL* ssl) {
  static const auto real = next<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

}  // extern "C"
