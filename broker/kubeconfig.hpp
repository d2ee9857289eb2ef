#pragma once

// Kubernetes as people run it (issue 24): where a kube context's server,
// trust and credentials come from besides the settings written out.
//
//   kubeconfig: FILE    a kubeconfig (kubectl's): its current-context, or
//                       `kubeconfig_context`; certificate-authority(-data),
//                       client-certificate(-data) and client-key(-data),
//                       token or tokenFile, insecure-skip-tls-verify
//   in_cluster: true    a pod's service account: https://$KUBERNETES_SERVICE_HOST:
//                       $KUBERNETES_SERVICE_PORT, the token file and ca.crt
//                       under /var/run/secrets/kubernetes.io/serviceaccount
//
// Relative paths in a kubeconfig are relative to its own directory, as
// kubectl reads them. Exec and auth-provider plugins are not run: such a
// user is refused with what to write instead.

#include <functional>
#include <optional>
#include <string>

#include "net/tls_context.hpp"

namespace tidings::broker {

struct kube_credentials {
  std::string server;
  net::tls_settings tls;  // files
  // PEM text from the kubeconfig's *-data fields (base64-decoded), in
  // place of the matching file.
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  std::string token_file;  // read again whenever it changes
};

// The kubeconfig at `path`, its context `context` ("": current-context).
// An error names the file and what is wrong in it.
std::optional<std::string> read_kubeconfig(const std::string& path, const std::string& context,
                                           kube_credentials* out);

// A pod's service account. `env` looks up an environment variable (null
// when unset); `account_dir` is the service account's directory.
inline constexpr const char* service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
std::optional<std::string> read_in_cluster(const std::function<const char*(const char*)>& env,
                                           const std::string& account_dir, kube_credentials* out);

}  // namespace tidings::broker
