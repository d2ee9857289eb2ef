#include "net/tls_context.hpp"

#include "net/tls_files.hpp"
#include "net/tls_pem.hpp"

#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

#include <openssl/x509_vfy.h>
#include <boost/asio/ssl/context.hpp>

namespace tidings::net {

namespace ssl = boost::asio::ssl;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::shared_ptr<tls_context> client_context_base() {
  auto ctx = std::make_shared<tls_context>(ssl::context::tls_client);
  // TLS 1.0 and 1.1 are deprecated (RFC 8996); compression invites CRIME.
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression);
  return ctx;
}

}  // namespace

std::shared_ptr<tls_context> make_tls_client_context(const tls_settings& settings, std::string* error,
                                                     const tls_setting_names& names) {
  return make_tls_client_context(settings, tls_pem{}, error, names);
}

std::shared_ptr<tls_context> make_tls_client_context(const tls_settings& settings, const tls_pem& pem,
                                                     std::string* error, const tls_setting_names& names) {
  auto fail = [error](const std::string& message) {
    if (error) *error = message;
    return nullptr;
  };
  auto ctx = client_context_base();
  boost::system::error_code ec;
  if (!pem.ca.empty() && !settings.ca_file.empty())
    return fail(names.ca_file + " is given twice (a file and inline data): keep one");
  if (!pem.client_cert.empty() && !settings.client_cert.empty())
    return fail(names.client_cert + " is given twice (a file and inline data): keep one");
  if (!pem.client_key.empty() && !settings.client_key.empty())
    return fail(names.client_key + " is given twice (a file and inline data): keep one");
  if (settings.insecure_skip_verify && (!settings.ca_file.empty() || !pem.ca.empty()))
    return fail(names.insecure_skip_verify + " checks nothing, so " + names.ca_file +
                " would be ignored: keep one of them");
  if (settings.insecure_skip_verify) {
    ctx->set_verify_mode(ssl::verify_none);
  } else {
    ctx->set_verify_mode(ssl::verify_peer);
    if (!pem.ca.empty()) {
      ctx->add_certificate_authority(boost::asio::buffer(pem.ca), ec);
      if (ec) return fail(names.ca_file + " (inline data): no PEM certificate in it (" + ec.message() + ")");
    } else if (settings.ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
      if (ec) return fail("the system's CA store: " + ec.message());
    } else {
      const auto& file = settings.ca_file;
      if (!readable_file(file)) return fail(names.ca_file + " " + file + ": cannot be read");
      ctx->load_verify_file(file, ec);
      if (ec) return fail(names.ca_file + " " + file + ": no PEM certificate in it (" + ec.message() + ")");
    }
  }
  const bool has_cert = !settings.client_cert.empty() || !pem.client_cert.empty();
  const bool has_key = !settings.client_key.empty() || !pem.client_key.empty();
  if (has_cert != has_key)
    return fail(names.client_cert + " and " + names.client_key + " go together (mutual TLS needs both)");
  if (!pem.client_cert.empty() || !pem.client_key.empty()) {
    // Inline data: a file given for the other half is read into the pair.
    auto cert = pem.client_cert.empty() ? slurp(settings.client_cert) : pem.client_cert;
    auto key = pem.client_key.empty() ? slurp(settings.client_key) : pem.client_key;
    ctx->use_certificate_chain(boost::asio::buffer(cert), ec);
    if (ec) return fail(names.client_cert + ": no PEM certificate in it (" + ec.message() + ")");
    ctx->use_private_key(boost::asio::buffer(key), ssl::context::pem, ec);
    if (ec)
      return fail(names.client_key + ": not the PEM key of " + names.client_cert + " (" + ec.message() + ")");
  } else if (!settings.client_cert.empty()) {
    const auto& cert = settings.client_cert;
    const auto& key = settings.client_key;
    if (!readable_file(cert)) return fail(names.client_cert + " " + cert + ": cannot be read");
    if (!readable_file(key)) return fail(names.client_key + " " + key + ": cannot be read");
    ctx->use_certificate_chain_file(cert, ec);
    if (ec) return fail(names.client_cert + " " + cert + ": no PEM certificate in it (" + ec.message() + ")");
    auto loaded = use_unencrypted_key_file(*ctx, key);
    if (loaded.encrypted)
      return fail(names.client_key + " " + key + ": an encrypted key (give it without a passphrase)");
    if (loaded.error)
      return fail(names.client_key + " " + key + ": not the PEM key of " + names.client_cert + " (" +
                  loaded.error.message() + ")");
  }
  return ctx;
}

bool readable_file(const std::string& path) {
  return std::ifstream(path).good();
}

key_file_load use_unencrypted_key_file(tls_context& ctx, const std::string& path) {
  auto asked = std::make_shared<bool>(false);
  ctx.set_password_callback([asked](std::size_t, ssl::context::password_purpose) {
    *asked = true;
    return std::string();
  });
  key_file_load out;
  ctx.use_private_key_file(path, ssl::context::pem, out.error);
  out.encrypted = *asked;
  return out;
}

std::shared_ptr<tls_context> default_tls_client_context() {
  static const std::shared_ptr<tls_context> shared = [] {
    auto ctx = client_context_base();
    ctx->set_verify_mode(ssl::verify_peer);
    // Without a store every handshake fails as "unknown CA", which says it.
    boost::system::error_code ignored;
    ctx->set_default_verify_paths(ignored);
    return ctx;
  }();
  return shared;
}

std::string tls_failure_kind(long verify_result) {
  switch (verify_result) {
    case X509_V_OK:
      return "handshake refused";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return "unknown CA";
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return "certificate expired";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "certificate not yet valid";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return "name mismatch";
    default:
      return "certificate rejected";
  }
}

std::string tls_failure_reason(long verify_result, const boost::system::error_code& ec) {
  // Verification passed (or never ran): the peer ended the handshake, and
  // OpenSSL's words for its alert are the detail.
  const std::string detail =
      verify_result == X509_V_OK ? ec.message() : X509_verify_cert_error_string(verify_result);
  return tls_failure_kind(verify_result) + " (" + detail + ")";
}

namespace {

struct failure_tally {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, std::uint64_t> counts;
};

failure_tally& tally() {
  static failure_tally shared;
  return shared;
}

}  // namespace

void count_tls_failure(const std::string& upstream, const std::string& kind) {
  auto& t = tally();
  std::lock_guard lock(t.mutex);
  ++t.counts[{upstream, kind}];
}

std::vector<tls_failure_count> tls_failure_counts() {
  auto& t = tally();
  std::lock_guard lock(t.mutex);
  std::vector<tls_failure_count> out;
  out.reserve(t.counts.size());
  for (const auto& [key, count] : t.counts) out.push_back({key.first, key.second, count});
  return out;
}

}  // namespace tidings::net
