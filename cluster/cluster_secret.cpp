#include "cluster/cluster_secret.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdint>
#include <stdexcept>

#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

// Each part with its length first: ("ab","c") and ("a","bc") differ.
void append_part(std::string& out, std::string_view part) {
  auto n = static_cast<std::uint64_t>(part.size());
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(part);
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

constexpr std::string_view record_label = "tidings/member-record/v1";

}  // namespace

std::string framed(std::string_view label, std::initializer_list<std::string_view> parts) {
  std::string out;
  append_part(out, label);
  for (auto p : parts) append_part(out, p);
  return out;
}

std::string cluster_secret::mac(std::string_view label, std::initializer_list<std::string_view> parts) const {
  auto input = framed(label, parts);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
            reinterpret_cast<const unsigned char*>(input.data()), input.size(), out, &len))
    throw std::runtime_error("HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string cluster_secret::seal(const std::string& member, const std::string& security) const {
  proto::MemberRecord r;
  r.set_member(member);
  r.set_security(security);
  r.set_proof(mac(record_label, {member, security}));
  return r.SerializeAsString();
}

std::optional<opened_record> cluster_secret::open(const std::string& record, std::string* why) const {
  proto::MemberRecord r;
  // A proof of another length is no seal: a plain Member parses as a
  // MemberRecord too (from a tidingsd before sealed records).
  if (!r.ParseFromString(record) || r.member().empty() || r.proof().size() != 32) {
    *why = "not a sealed member record (a tidingsd from before ADR 0024, or not a member record at all)";
    return std::nullopt;
  }
  if (!same(r.proof(), mac(record_label, {r.member(), r.security()}))) {
    *why = "sealed with another cluster secret";
    return std::nullopt;
  }
  return opened_record{r.member(), r.security()};
}

std::string cluster_secret::fingerprint(std::string_view description) const {
  return mac("tidings/security/v1", {description});
}

std::string cluster_secret::prove(std::string_view role,
                                  std::initializer_list<std::string_view> parts) const {
  return mac(role, parts);
}

bool cluster_secret::verify(std::string_view role, std::initializer_list<std::string_view> parts,
                            std::string_view proof) const {
  return same(proof, mac(role, parts));
}

std::string make_nonce() {
  std::string out(nonce_bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size())) != 1)
    throw std::runtime_error("no random bytes for a nonce");
  return out;
}

std::string short_hex(std::string_view bytes, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < n; ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

}  // namespace tidings::cluster
