#include "net/tls_server.hpp"

#include "net/tls_files.hpp"

#include <ctime>
#include <utility>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/ssl/context.hpp>

namespace tidings::net {

namespace ssl = boost::asio::ssl;

namespace {

// TLS 1.2's suites of Mozilla's "intermediate" profile: forward secret
// (ECDHE) and authenticated encryption only. TLS 1.3's own defaults are
// already that.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// Which connections may resume a session cached here (any of this node's).
constexpr unsigned char session_id_context[] = "tidings";

tls_certificate_info describe(X509* cert) {
  tls_certificate_info out;
  if (!cert) return out;
  if (auto* name = X509_get_subject_name(cert)) {
    char buf[512];
    X509_NAME_oneline(name, buf, sizeof buf);
    out.subject = buf;
    // "/CN=a/O=b" reads better as "CN=a, O=b".
    if (out.subject.starts_with('/')) out.subject.erase(0, 1);
    for (std::size_t at = 0; (at = out.subject.find('/', at)) != std::string::npos; at += 2)
      out.subject.replace(at, 1, ", ");
  }
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1) {
    out.not_after_unix = static_cast<std::int64_t>(timegm(&tm));
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    out.not_after = buf;
  }
  return out;
}

}  // namespace

std::shared_ptr<tls_context> make_tls_server_context(const std::string& cert_file,
                                                     const std::string& key_file, std::string* error,
                                                     tls_certificate_info* info) {
  auto fail = [error](const std::string& message) {
    if (error) *error = message;
    return nullptr;
  };
  if (cert_file.empty() || key_file.empty()) return fail("tls-cert and tls-key go together (give both)");
  if (!readable_file(cert_file)) return fail("tls-cert " + cert_file + ": cannot be read");
  if (!readable_file(key_file)) return fail("tls-key " + key_file + ": cannot be read");
  auto ctx = std::make_shared<tls_context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression);
  auto* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1) return fail("the TLS 1.2 cipher list was refused");
  // An idle session gives its record buffers back (tens of KB each).
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_id_context(native, session_id_context, sizeof session_id_context - 1);
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
  boost::system::error_code ec;
  // The key before the certificate: OpenSSL then drops a key that does not
  // match, and the check below says so in its own words.
  auto loaded = use_unencrypted_key_file(*ctx, key_file);
  if (loaded.encrypted)
    return fail("tls-key " + key_file + ": an encrypted key (give it without a passphrase)");
  if (loaded.error)
    return fail("tls-key " + key_file + ": no PEM private key in it (" + loaded.error.message() + ")");
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) return fail("tls-cert " + cert_file + ": no PEM certificate in it (" + ec.message() + ")");
  if (SSL_CTX_check_private_key(native) != 1)
    return fail("tls-key " + key_file + ": not the key of the certificate in tls-cert " + cert_file);
  if (info) *info = describe(SSL_CTX_get0_certificate(native));
  return ctx;
}

tls_server_keys::tls_server_keys(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

std::optional<std::string> tls_server_keys::load() {
  std::string error;
  tls_certificate_info info;
  auto ctx = make_tls_server_context(cert_file_, key_file_, &error, &info);
  if (!ctx) return error;
  std::lock_guard lock(mutex_);
  context_ = std::move(ctx);
  info_ = std::move(info);
  return std::nullopt;
}

std::shared_ptr<tls_context> tls_server_keys::current() const {
  std::lock_guard lock(mutex_);
  return context_;
}

tls_certificate_info tls_server_keys::info() const {
  std::lock_guard lock(mutex_);
  return info_;
}

}  // namespace tidings::net
