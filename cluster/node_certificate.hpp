#pragma once

// A node's cluster certificate (ADR 0032): the cluster CA, this node's
// certificate and its key, read and checked once at start. CAF's OpenSSL
// module makes the connections mutual TLS, but it checks only that the
// peer's chain reaches the CA: it cannot say which member is at the other
// end. So each member's record in etcd carries its certificate, every
// member checks that certificate against the CA, and a join is signed with
// the key of the certificate its record names (peer_gate.hpp). A process
// holding another member's record, or a certificate of its own, cannot
// pass for that member.

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

namespace tidings::cluster {

class node_certificate {
 public:
  // Reads the three PEM files and checks them: the certificate (the first
  // in its file; intermediates after it are sent in TLS handshakes) chains
  // to the CA file's certificates alone, as members check each other's
  // records, is valid now and allowed for serverAuth and clientAuth, and
  // the key is the certificate's and not encrypted. nullptr, with *why
  // naming the file and the fault, otherwise.
  static std::shared_ptr<const node_certificate> load(const std::string& ca_file,
                                                      const std::string& cert_file,
                                                      const std::string& key_file, std::string* why);
  ~node_certificate();
  node_certificate(const node_certificate&) = delete;
  node_certificate& operator=(const node_certificate&) = delete;

  // This node's certificate (DER), as its member record carries it.
  const std::string& der() const { return der_; }
  // Lower-case hex SHA-256 over the CA file's certificates (DER, as a
  // set), logged at start so operators can compare the nodes' CAs.
  const std::string& ca_fingerprint() const { return ca_fingerprint_; }
  // The certificate's subject, one line, for log lines.
  const std::string& subject() const { return subject_; }
  std::chrono::system_clock::time_point not_after() const { return not_after_; }
  // The files as read (PEM), for CAF's copies (frozen_tls_files).
  const std::string& ca_pem() const { return ca_pem_; }
  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }

  // The signature of this node's key over framed(role, parts).
  std::string sign(std::string_view role, std::initializer_list<std::string_view> parts) const;
  // Empty when `der` is a certificate the cluster CA signed, allowed for
  // both ends; otherwise why not. Not checked against this node's clock: TLS
  // refuses an expired certificate at every connection.
  std::string check_peer(const std::string& der) const;

 private:
  node_certificate() = default;
  struct keys;
  std::unique_ptr<keys> keys_;
  std::string der_, ca_fingerprint_, subject_, ca_pem_, cert_pem_, key_pem_;
  std::chrono::system_clock::time_point not_after_{};
};

// True when `signature` is the signature over framed(role, parts) of the
// key of certificate `der` (which this does not check against the CA).
bool signed_by(const std::string& der, std::string_view role, std::initializer_list<std::string_view> parts,
               std::string_view signature);

// CAF's OpenSSL module reads its files again on every connection and aborts
// the process on one it cannot load: a renewal written half-way would take
// the node down at its next connection. It gets copies instead, in sealed
// memory files (memfd) no one can change, named /proc/self/fd/N.
class frozen_tls_files {
 public:
  // nullptr and *why when the kernel refuses a memory file.
  static std::unique_ptr<frozen_tls_files> freeze(const node_certificate& cert, std::string* why);
  ~frozen_tls_files();
  frozen_tls_files(const frozen_tls_files&) = delete;
  frozen_tls_files& operator=(const frozen_tls_files&) = delete;

  std::string ca_path() const;
  std::string cert_path() const;
  std::string key_path() const;

 private:
  frozen_tls_files() = default;
  int ca_ = -1, cert_ = -1, key_ = -1;
};

}  // namespace tidings::cluster
