#pragma once

// The HTTPS listener's certificate (issue 24): the server context made from
// a PEM certificate chain and its key, and the holder a reload swaps a new
// one into. Connections keep the context they were accepted with, so a
// reload never touches an open session.
//
// TLS 1.2 and 1.3 only; TLS 1.2 offers only ECDHE key exchange with AEAD
// ciphers (Mozilla's "intermediate" profile), and no renegotiation. Session
// tickets and a server-side session cache let a reconnecting client resume
// without a full handshake (a reconnect storm costs one signature less per
// client). Kept apart from tls_context.hpp, which most of the tree includes.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "net/tls_context.hpp"

namespace tidings::net {

// What a loaded certificate says, for the log and the node's info.
struct tls_certificate_info {
  std::string subject;    // the leaf's subject, one line ("CN=node-1.example")
  std::string not_after;  // "2027-01-31T12:00:00Z"
  std::int64_t not_after_unix = 0;
};

// A server context from `cert_file` (the leaf first, then its chain) and
// `key_file`. nullptr with *error naming the file and what is wrong: cannot
// be read, no certificate in it, an encrypted key, a key that is not the
// certificate's.
std::shared_ptr<tls_context> make_tls_server_context(const std::string& cert_file,
                                                     const std::string& key_file, std::string* error,
                                                     tls_certificate_info* info = nullptr);

// The files named at start and the context made from them last. Thread-safe:
// the accepting thread reads current(), a reload calls load().
class tls_server_keys {
 public:
  tls_server_keys(std::string cert_file, std::string key_file);

  // Reads both files again. On failure the context in use stays and the
  // error names the file.
  std::optional<std::string> load();
  std::shared_ptr<tls_context> current() const;
  tls_certificate_info info() const;
  const std::string& cert_file() const { return cert_file_; }
  const std::string& key_file() const { return key_file_; }

 private:
  const std::string cert_file_;
  const std::string key_file_;
  mutable std::mutex mutex_;
  std::shared_ptr<tls_context> context_;
  tls_certificate_info info_;
};

}  // namespace tidings::net
