#pragma once

// A TLS client context from PEM text rather than files, for credentials
// that come inline (a kubeconfig's certificate-authority-data and
// client-*-data, issue 24). Kept apart from tls_context.hpp, which most of
// the tree includes.

#include <memory>
#include <string>

#include "net/tls_context.hpp"

namespace tidings::net {

struct tls_pem {
  std::string ca;           // trusted instead of settings.ca_file and the system store
  std::string client_cert;  // instead of settings.client_cert (with client_key)
  std::string client_key;
  bool any() const { return !ca.empty() || !client_cert.empty() || !client_key.empty(); }
};

// As make_tls_client_context, each non-empty PEM taking the place of its
// file (giving both for one thing is refused). Errors name the setting.
std::shared_ptr<tls_context> make_tls_client_context(const tls_settings& settings, const tls_pem& pem,
                                                     std::string* error, const tls_setting_names& names = {});

}  // namespace tidings::net
