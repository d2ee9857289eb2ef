#include "cluster/node_certificate.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "cluster/cluster_secret.hpp"

namespace tidings::cluster {
namespace {

template <class T, void (*Free)(T*)>
struct openssl_deleter {
  void operator()(T* p) const { Free(p); }
};
using x509_ptr = std::unique_ptr<X509, openssl_deleter<X509, X509_free>>;
using bio_ptr = std::unique_ptr<BIO, openssl_deleter<BIO, BIO_free_all>>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, openssl_deleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
using store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, openssl_deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return static_cast<bool>(in) || in.eof();
}

bio_ptr memory(const std::string& bytes) {
  return bio_ptr(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

std::string der_of(X509* cert) {
  unsigned char* out = nullptr;
  int n = i2d_X509(cert, &out);
  if (n <= 0) return {};
  std::string der(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  OPENSSL_free(out);
  return der;
}

x509_ptr from_der(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  return x509_ptr(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
}

std::string hex(const unsigned char* bytes, std::size_t n) {
  return short_hex(std::string_view(reinterpret_cast<const char*>(bytes), n), n);
}

std::string subject_of(X509* cert) {
  bio_ptr out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  auto n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

// Ed25519 and Ed448 sign the message itself; the others its SHA-256.
const EVP_MD* digest_for(EVP_PKEY* key) {
  auto id = EVP_PKEY_get_id(key);
  return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? nullptr : EVP_sha256();
}

// Empty when `leaf` chains to the certificates of `store`, is valid now
// (with `check_time`), and may serve both ends of a TLS connection (a member
// dials and is dialled).
std::string verify_chain(X509_STORE* store, X509* leaf, bool check_time) {
  for (int purpose : {X509_PURPOSE_SSL_SERVER, X509_PURPOSE_SSL_CLIENT}) {
    store_ctx_ptr ctx(X509_STORE_CTX_new());
    if (!ctx || X509_STORE_CTX_init(ctx.get(), store, leaf, nullptr) != 1) return "cannot check certificates";
    X509_STORE_CTX_set_purpose(ctx.get(), purpose);
    if (!check_time) X509_STORE_CTX_set_flags(ctx.get(), X509_V_FLAG_NO_CHECK_TIME);
    if (X509_verify_cert(ctx.get()) == 1) continue;
    auto err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();  // a CAF worker's next SSL call must not read this
    std::string why = X509_verify_cert_error_string(err);
    if (err == X509_V_ERR_INVALID_PURPOSE)
      why +=
          ": a member's certificate needs extendedKeyUsage serverAuth and clientAuth (it dials and is "
          "dialled)";
    return why;
  }
  return {};
}

int refuse_passphrase(char*, int, int, void* asked) {
  *static_cast<bool*>(asked) = true;
  return 0;
}

}  // namespace

struct node_certificate::keys {
  X509_STORE* store = X509_STORE_new();  // checked in load()
  EVP_PKEY* key = nullptr;
  ~keys() {
    X509_STORE_free(store);
    EVP_PKEY_free(key);
  }
};

node_certificate::~node_certificate() = default;

std::shared_ptr<const node_certificate> node_certificate::load(const std::string& ca_file,
                                                               const std::string& cert_file,
                                                               const std::string& key_file,
                                                               std::string* why) {
  std::shared_ptr<node_certificate> out(new node_certificate());
  out->keys_ = std::make_unique<keys>();
  auto fail = [why](const std::string& file, const std::string& what) {
    ERR_clear_error();
    *why = file + ": " + what;
    return nullptr;
  };
  if (!out->keys_->store) return fail(ca_file, "no memory for a certificate store");
  if (!read_file(ca_file, &out->ca_pem_)) return fail(ca_file, "cannot be read");
  if (!read_file(cert_file, &out->cert_pem_)) return fail(cert_file, "cannot be read");
  if (!read_file(key_file, &out->key_pem_)) return fail(key_file, "cannot be read");

  std::vector<std::string> ca_ders;
  auto ca_bio = memory(out->ca_pem_);
  while (x509_ptr ca{PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr)}) {
    ca_ders.push_back(der_of(ca.get()));
    X509_STORE_add_cert(out->keys_->store, ca.get());
  }
  // The loop ends at the end of the file (no more start lines), or at a
  // block it cannot read: the certificates after that would be lost.
  auto reason = ERR_GET_REASON(ERR_peek_last_error());
  ERR_clear_error();
  if (reason != PEM_R_NO_START_LINE) return fail(ca_file, "holds a PEM block that is not a certificate");
  if (ca_ders.empty()) return fail(ca_file, "holds no PEM certificate");
  // Of the set, not the file's order: a reordered bundle is the same CA.
  std::sort(ca_ders.begin(), ca_ders.end());
  std::string all;
  for (const auto& d : ca_ders) all += d;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(all.data(), all.size(), digest, &len, EVP_sha256(), nullptr);
  out->ca_fingerprint_ = hex(digest, len);

  x509_ptr leaf{PEM_read_bio_X509(memory(out->cert_pem_).get(), nullptr, nullptr, nullptr)};
  if (!leaf) return fail(cert_file, "holds no PEM certificate");
  // Alone, as members check each other's: a record carries no intermediates.
  if (auto err = verify_chain(out->keys_->store, leaf.get(), true); !err.empty())
    return fail(cert_file, "is not a certificate of the cluster CA in " + ca_file + " (" + err + ")");

  bool asked = false;
  out->keys_->key = PEM_read_bio_PrivateKey(memory(out->key_pem_).get(), nullptr, refuse_passphrase, &asked);
  if (asked) return fail(key_file, "is encrypted; give the key unencrypted, readable by this user only");
  if (!out->keys_->key) return fail(key_file, "holds no PEM private key");
  if (X509_check_private_key(leaf.get(), out->keys_->key) != 1)
    return fail(key_file, "is not the key of the certificate in " + cert_file);

  out->der_ = der_of(leaf.get());
  out->subject_ = subject_of(leaf.get());
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf.get()), &tm) != 1)
    return fail(cert_file, "has an expiry time that cannot be read");
  out->not_after_ = std::chrono::system_clock::from_time_t(timegm(&tm));
  return out;
}

std::string node_certificate::sign(std::string_view role,
                                   std::initializer_list<std::string_view> parts) const {
  auto message = framed(role, parts);
  md_ctx_ptr ctx(EVP_MD_CTX_new());
  std::size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, digest_for(keys_->key), nullptr, keys_->key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1)
    return {};
  std::string out(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    return {};
  out.resize(len);
  return out;
}

std::string node_certificate::check_peer(const std::string& der) const {
  auto cert = from_der(der);
  if (!cert) {
    ERR_clear_error();
    return "its record carries no certificate";
  }
  // Not against this node's clock: TLS refuses an expired certificate at
  // every connection, and a clock that runs behind must not make a fresh
  // certificate's record (or this node's own) a stranger's.
  auto err = verify_chain(keys_->store, cert.get(), false);
  if (err.empty()) return {};
  return "its certificate (" + subject_of(cert.get()) + ") is not one of the cluster CA: " + err;
}

bool signed_by(const std::string& der, std::string_view role, std::initializer_list<std::string_view> parts,
               std::string_view signature) {
  auto cert = from_der(der);
  EVP_PKEY* key = cert ? X509_get0_pubkey(cert.get()) : nullptr;
  md_ctx_ptr ctx(EVP_MD_CTX_new());
  if (!key || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, digest_for(key), nullptr, key) != 1) {
    ERR_clear_error();
    return false;
  }
  auto message = framed(role, parts);
  bool ok =
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  // A forged signature leaves errors that a CAF worker's next SSL call would read as its own.
  ERR_clear_error();
  return ok;
}

namespace {

int sealed_memory_file(const char* name, const std::string& bytes, std::string* why) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *why = std::string("memfd_create: ") + std::strerror(errno);
    return -1;
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = std::string("writing a memory file: ") + std::strerror(errno);
      close(fd);
      return -1;
    }
    done += static_cast<std::size_t>(n);
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    *why = std::string("sealing a memory file: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

std::unique_ptr<frozen_tls_files> frozen_tls_files::freeze(const node_certificate& cert, std::string* why) {
  std::unique_ptr<frozen_tls_files> out(new frozen_tls_files());
  out->ca_ = sealed_memory_file("tidings-cluster-ca", cert.ca_pem(), why);
  if (out->ca_ >= 0) out->cert_ = sealed_memory_file("tidings-cluster-cert", cert.cert_pem(), why);
  if (out->cert_ >= 0) out->key_ = sealed_memory_file("tidings-cluster-key", cert.key_pem(), why);
  if (out->key_ < 0) return nullptr;
  return out;
}

frozen_tls_files::~frozen_tls_files() {
  for (int fd : {ca_, cert_, key_})
    if (fd >= 0) close(fd);
}

std::string frozen_tls_files::ca_path() const {
  return fd_path(ca_);
}
std::string frozen_tls_files::cert_path() const {
  return fd_path(cert_);
}
std::string frozen_tls_files::key_path() const {
  return fd_path(key_);
}

}  // namespace tidings::cluster
