#pragma once

// The cluster's shared secret and what it proves (ADR 0024). A member's
// record in etcd is sealed with it, and two members that connect prove to
// each other that they hold it, each with an HMAC-SHA256 over fresh nonces
// of both sides: the secret itself never travels. Pure functions over
// bytes; the registrar and the peer gate decide what to do with a refusal.

#include <optional>
#include <string>
#include <string_view>

namespace tidings::cluster {

// At least this many bytes: an HMAC key shorter than its hash is guessable
// offline from one sealed record.
inline constexpr std::size_t min_secret_bytes = 32;

struct opened_record {
  std::string member;    // a serialized proto::Member
  std::string security;  // its security fingerprint
};

class cluster_secret {
 public:
  explicit cluster_secret(std::string key) : key_(std::move(key)) {}

  // A proto::MemberRecord holding `member` and `security`, sealed.
  std::string seal(const std::string& member, const std::string& security) const;
  // The record's contents when it was sealed with this secret; nullopt
  // (and *why) when it is not a record or was sealed with another.
  std::optional<opened_record> open(const std::string& record, std::string* why) const;

  // A keyed hash of a node's security configuration: equal configurations,
  // equal fingerprints, and nothing about the keys inside without the secret.
  std::string fingerprint(std::string_view description) const;

  // The proof a side of a join gives, over `parts` (both nonces and who
  // proves to whom). `role` keeps one side's proof from passing for the
  // other's.
  std::string prove(std::string_view role, std::initializer_list<std::string_view> parts) const;
  // Compared in constant time.
  bool verify(std::string_view role, std::initializer_list<std::string_view> parts,
              std::string_view proof) const;

 private:
  std::string mac(std::string_view label, std::initializer_list<std::string_view> parts) const;
  std::string key_;
};

// Fresh nonces are this long: 32 bytes from OpenSSL's CSPRNG.
inline constexpr std::size_t nonce_bytes = 32;
std::string make_nonce();

// `label` and then each part, each with its length first: ("ab","c") and
// ("a","bc") differ. What a proof or a signature is made over.
std::string framed(std::string_view label, std::initializer_list<std::string_view> parts);

// Lower-case hex of the first `bytes` bytes, for log lines.
std::string short_hex(std::string_view bytes, std::size_t n = 6);

}  // namespace tidings::cluster
