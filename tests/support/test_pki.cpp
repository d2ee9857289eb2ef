#include "tests/support/test_pki.hpp"

#include <cstdio>
#include <stdexcept>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tests/support/openssl_ptr.hpp"

namespace tidings::testing {

namespace {

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test_pki: ") + what + " failed");
}

pkey_ptr new_key() {
  pkey_ptr key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EC key generation");
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check(ext != nullptr, "an X.509 extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`; self-signed when issuer is null.
x509_ptr new_cert(EVP_PKEY* key, const std::string& cn, long serial, std::chrono::seconds from,
                  std::chrono::seconds to, X509* issuer) {
  x509_ptr cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(from.count()));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(to.count()));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  return cert;
}

void sign(X509* cert, EVP_PKEY* key) {
  check(X509_sign(cert, key, EVP_sha256()) > 0, "signing");
}

void write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "opening a PEM file");
  const bool ok = cert ? PEM_write_X509(f, cert) == 1
                       : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  check(ok, "writing a PEM file");
}

}  // namespace

struct test_ca::keys {
  pkey_ptr key;
  x509_ptr cert;
};

test_ca::test_ca(std::string dir, std::string stem) : dir_(std::move(dir)), keys_(std::make_unique<keys>()) {
  keys_->key = new_key();
  keys_->cert = new_cert(keys_->key.get(), stem + " test CA", serial_++, std::chrono::hours(-1),
                         std::chrono::hours(24 * 30), nullptr);
  add_extension(keys_->cert.get(), keys_->cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(keys_->cert.get(), keys_->cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(keys_->cert.get(), keys_->cert.get(), NID_subject_key_identifier, "hash");
  sign(keys_->cert.get(), keys_->key.get());
  files_ = {dir_ + "/" + stem + "-ca.pem", dir_ + "/" + stem + "-ca.key"};
  write_pem(files_.cert, keys_->cert.get(), nullptr);
  write_pem(files_.key, nullptr, keys_->key.get());
}

test_ca::~test_ca() = default;

pem_files test_ca::issue(const std::string& stem, const leaf_spec& spec) {
  const auto key = new_key();
  auto cert =
      new_cert(key.get(), spec.common_name, serial_++, spec.not_before, spec.not_after, keys_->cert.get());
  add_extension(cert.get(), keys_->cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), keys_->cert.get(), NID_ext_key_usage,
                spec.usage == usage::server   ? "serverAuth"
                : spec.usage == usage::client ? "clientAuth"
                                              : "serverAuth,clientAuth");
  add_extension(cert.get(), keys_->cert.get(), NID_authority_key_identifier, "keyid:always");
  if (!spec.alt_names.empty()) {
    std::string sans;
    for (const auto& n : spec.alt_names) sans += (sans.empty() ? "" : ",") + n;
    add_extension(cert.get(), keys_->cert.get(), NID_subject_alt_name, sans);
  }
  sign(cert.get(), keys_->key.get());
  pem_files out{dir_ + "/" + stem + ".pem", dir_ + "/" + stem + ".key"};
  write_pem(out.cert, cert.get(), nullptr);
  write_pem(out.key, nullptr, key.get());
  return out;
}

}  // namespace tidings::testing
