#include "tests/support/tls_loopback_server.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/write.hpp>
#include "tests/support/openssl_ptr.hpp"

namespace tidings::testing {

namespace ssl = boost::asio::ssl;

namespace {

std::string common_name(X509* cert) {
  char buf[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
  return buf;
}

}  // namespace

tls_loopback_server::tls_loopback_server(const pem_files& server, script s, const std::string& client_ca)
    : context_(ssl::context::tls_server),
      script_(std::move(s)),
      server_([this](tcp_socket& socket) { serve(socket); }) {
  context_.use_certificate_chain_file(server.cert);
  context_.use_private_key_file(server.key, ssl::context::pem);
  if (!client_ca.empty()) {
    context_.load_verify_file(client_ca);
    context_.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
}

std::string tls_loopback_server::url(const std::string& host, const std::string& target) const {
  return "https://" + host + ":" + std::to_string(port()) + target;
}

std::vector<tls_handshake_seen> tls_loopback_server::handshakes() const {
  std::lock_guard lock(mutex_);
  return seen_;
}

void tls_loopback_server::serve(tcp_socket& socket) {
  tls_socket stream(socket, context_);
  boost::system::error_code ec;
  stream.handshake(ssl::stream_base::server, ec);
  tls_handshake_seen seen;
  seen.error = ec ? ec.message() : "";
  if (const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name))
    seen.server_name = sni;
  if (x509_ptr peer{SSL_get1_peer_certificate(stream.native_handle())})
    seen.client_cn = common_name(peer.get());
  {
    std::lock_guard lock(mutex_);
    seen_.push_back(seen);
  }
  if (ec) return;
  script_(stream);
  stream.shutdown(ec);
}

void write_all(tls_socket& s, const std::string& bytes) {
  boost::system::error_code ignored;
  boost::asio::write(s, boost::asio::buffer(bytes), ignored);
}

}  // namespace tidings::testing
