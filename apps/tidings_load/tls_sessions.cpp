#include "apps/tidings_load/tls_sessions.hpp"

namespace tidings::load {

tls_sessions::tls_sessions(std::size_t sessions, bool resume)
    : context_(boost::asio::ssl::context::tls_client), resume_(resume), kept_(sessions, nullptr) {
  context_.set_verify_mode(boost::asio::ssl::verify_none);
  // Offered in browsers' order (Chrome's and Firefox's), so the suite the
  // node negotiates is the one real sessions get: OpenSSL's own order
  // puts AES-256 first.
  SSL_CTX_set_ciphersuites(context_.native_handle(),
                           "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384");
  // Without a client-side cache mode OpenSSL keeps no session to offer.
  SSL_CTX_set_session_cache_mode(context_.native_handle(),
                                 resume ? SSL_SESS_CACHE_CLIENT : SSL_SESS_CACHE_OFF);
  if (!resume) SSL_CTX_set_options(context_.native_handle(), SSL_OP_NO_TICKET);
}

tls_sessions::~tls_sessions() {
  for (auto* s : kept_)
    if (s) SSL_SESSION_free(s);
}

void tls_sessions::prepare(std::size_t s, SSL* ssl) {
  if (resume_ && s < kept_.size() && kept_[s]) SSL_set_session(ssl, kept_[s]);
}

void tls_sessions::established(std::size_t s, SSL* ssl) {
  if (SSL_session_reused(ssl) == 1)
    ++resumed_;
  else
    ++full_;
  if (!resume_ || s >= kept_.size()) return;
  if (kept_[s]) SSL_SESSION_free(kept_[s]);
  kept_[s] = SSL_get1_session(ssl);
}

}  // namespace tidings::load
