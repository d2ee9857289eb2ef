#pragma once

// Who may fire a webhook beyond knowing its URL (issue 24): an HMAC-SHA256
// of the body under a shared secret, in the forms senders use:
//
//   github       X-Hub-Signature-256: sha256=<hex>          over the body
//   stripe       Stripe-Signature: t=<unix s>,v1=<hex>[,v1=...]
//                                                         over "<t>.<body>"
//   hmac-sha256  <header>: [sha256=]<hex>                   over the body, or
//                over "<t>.<body>" with <timestamp_header>: <unix s>
//
// Digests are compared in constant time. A timestamp must be within the
// replay window of now; a delivery accepted once is refused again within
// twice the window (replay_guard, one per node and kept in memory: a
// restart, or another node of a cluster, does not know it). Time comes
// from the caller, so tests drive it with a fake clock.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tidings::sources::web {

enum class signature_scheme { github, stripe, hmac_sha256 };

// "github", "stripe", "hmac-sha256"; nullopt for anything else.
std::optional<signature_scheme> parse_signature_scheme(std::string_view name);
std::string scheme_name(signature_scheme scheme);

struct signature_config {
  signature_scheme scheme = signature_scheme::github;
  std::string secret;
  std::vector<std::string> previous_secrets;  // still accepted during a rotation
  std::string header;                         // hmac-sha256 only; default X-Signature-256
  std::string timestamp_header;               // hmac-sha256 only; "": the body alone is signed
  std::chrono::seconds window{300};           // how old a timestamp may be; how long replays are refused

  // The header carrying the signature, as senders spell it.
  std::string signature_header() const;
  bool operator==(const signature_config&) const = default;
};

// A request header by lower-case name; null when absent.
using header_lookup = std::function<const std::string*(const std::string& lower_name)>;

struct signature_verdict {
  std::string error;       // empty: the signature is good
  std::string replay_key;  // identifies the delivery: a digest of what was signed
};

signature_verdict check_signature(const signature_config& cfg, const header_lookup& headers,
                                  std::string_view body, std::chrono::system_clock::time_point now);

// The lower-case hex HMAC-SHA256 of `message` under `secret` (what a sender
// computes; tests sign with it).
std::string hmac_sha256_hex(std::string_view secret, std::string_view message);

// The signatures accepted within the window, oldest first. Bounded: past
// `capacity` the oldest is forgotten early (a sender that fast is one that
// holds the secret).
class replay_guard {
 public:
  using time_point = std::chrono::system_clock::time_point;
  explicit replay_guard(std::size_t capacity = 100000) : capacity_(capacity) {}

  // Remembers `key` and returns nullopt the first time within twice
  // `window`; for a replay, when it was first accepted.
  std::optional<time_point> remember(const std::string& key, time_point now, std::chrono::seconds window);
  std::size_t size() const { return seen_.size(); }

 private:
  void expire(time_point now, std::chrono::seconds window);

  std::size_t capacity_;
  std::unordered_map<std::string, time_point> seen_;
  std::deque<std::pair<time_point, std::string>> order_;
};

}  // namespace tidings::sources::web
