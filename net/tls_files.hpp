#pragma once

// Internal to net/: reading the files of a TLS context the same way for an
// upstream's client certificate and for the node's own server certificate.

#include <string>

#include <boost/system/error_code.hpp>

#include "net/tls_context.hpp"

namespace tidings::net {

// The file exists and this process may read it.
bool readable_file(const std::string& path);

// Loads a PEM private key into `ctx` without ever asking for a passphrase:
// OpenSSL would otherwise prompt on the terminal for an encrypted key.
struct key_file_load {
  bool encrypted = false;           // the key is encrypted: not loaded
  boost::system::error_code error;  // any other failure
};
key_file_load use_unencrypted_key_file(tls_context& ctx, const std::string& path);

}  // namespace tidings::net
