#pragma once

// TLS for the HTTP client's https:// upstreams (issue 24): one upstream's
// settings, the OpenSSL client context made from them once (at config
// time, so a bad file stops the node instead of every request), and the
// words a user reads when a handshake fails.
//
// Verification is always on unless insecure_skip_verify is written: the
// peer's chain against ca_file (or the system store), and its name or IP
// address against the URL's host (OpenSSL's own check, so its verdict is
// the one reported). SNI is sent for names, never for IP addresses
// (RFC 6066).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/system/error_code.hpp>

namespace boost::asio::ssl {
class context;
}

namespace tidings::net {

struct tls_settings {
  std::string ca_file;      // PEM bundle to trust instead of the system store; "" for the store
  std::string client_cert;  // PEM chain presented for mutual TLS (with client_key)
  std::string client_key;   // PEM private key of client_cert
  bool insecure_skip_verify = false;

  bool operator==(const tls_settings&) const = default;
  bool any() const {
    return !ca_file.empty() || !client_cert.empty() || !client_key.empty() || insecure_skip_verify;
  }
};

using tls_context = boost::asio::ssl::context;

// What the settings are called where they were written, for errors.
struct tls_setting_names {
  std::string ca_file = "ca_file";
  std::string client_cert = "client_cert";
  std::string client_key = "client_key";
  std::string insecure_skip_verify = "insecure_skip_verify";
};

// A client context for these settings: TLS 1.2 or later, the trust and the
// client certificate loaded now. nullptr with *error naming the setting,
// its file and OpenSSL's reason. insecure_skip_verify with a ca_file is
// refused (one of them would mean nothing), as is an encrypted key.
std::shared_ptr<tls_context> make_tls_client_context(const tls_settings& settings, std::string* error,
                                                     const tls_setting_names& names = {});

// The context of https:// upstreams configured without TLS settings:
// the system store, verification on. Made once, shared by every thread.
std::shared_ptr<tls_context> default_tls_client_context();

// Why a client handshake failed, for a source's status and its ERROR event:
// tls_failure_kind's words, then OpenSSL's own in parentheses. verify_result
// is SSL_get_verify_result() of the connection (X509_V_OK when nothing was
// verified: the peer ended the handshake).
std::string tls_failure_reason(long verify_result, const boost::system::error_code& ec);
// The reason alone, as metrics label it: "unknown CA", "certificate
// expired", "certificate not yet valid", "name mismatch", "certificate
// rejected" or "handshake refused".
std::string tls_failure_kind(long verify_result);

// Failed handshakes since the process started, by upstream ("host:port")
// and kind: a tally the HTTP client keeps and the node's /metrics reads
// (tidings_upstream_tls_failures_total). Bounded by the upstreams a node
// is configured with.
struct tls_failure_count {
  std::string upstream;
  std::string kind;
  std::uint64_t count = 0;
};
void count_tls_failure(const std::string& upstream, const std::string& kind);
std::vector<tls_failure_count> tls_failure_counts();

}  // namespace tidings::net
