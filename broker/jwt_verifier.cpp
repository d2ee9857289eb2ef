#include "broker/jwt_verifier.hpp"

#include <jwt.h>
#include <openssl/err.h>

#include <array>
#include <climits>
#include <memory>

#include <nlohmann/json.hpp>

namespace tidings::broker {
namespace {

using json = nlohmann::json;
using core::token_problem;

constexpr std::uint8_t invalid = 0xff;  // not a base64url character

verify_result refuse(token_problem p, std::string why) {
  verify_result r;
  r.problem = p;
  r.error = std::move(why);
  return r;
}

// RFC 7515 2 / RFC 4648 5 without padding, and canonical: the bits left
// over after the last whole byte must be zero, so one token has one text.
std::optional<std::string> base64url_decode(std::string_view in) {
  static constexpr auto table = [] {
    std::array<std::uint8_t, 256> t{};
    t.fill(invalid);
    for (int i = 0; i < 26; ++i) {
      t[static_cast<unsigned char>('A' + i)] = static_cast<std::uint8_t>(i);
      t[static_cast<unsigned char>('a' + i)] = static_cast<std::uint8_t>(26 + i);
    }
    for (int i = 0; i < 10; ++i) t[static_cast<unsigned char>('0' + i)] = static_cast<std::uint8_t>(52 + i);
    t[static_cast<unsigned char>('-')] = 62;
    t[static_cast<unsigned char>('_')] = 63;
    return t;
  }();
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    auto v = table[static_cast<unsigned char>(c)];
    if (v == invalid) return std::nullopt;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
      acc &= (1u << bits) - 1;
    }
  }
  if (acc != 0) return std::nullopt;
  return out;
}

// A header value quoted back in an error: short and printable.
std::string printable(std::string_view s) {
  constexpr std::size_t max = 32;
  std::string out;
  for (char c : s.substr(0, max)) out.push_back(c >= 0x20 && c <= 0x7e ? c : '?');
  if (s.size() > max) out += "...";
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

jwt_alg_t libjwt_alg(key_alg a) {
  switch (a) {
    case key_alg::hs256:
      return JWT_ALG_HS256;
    case key_alg::rs256:
      return JWT_ALG_RS256;
    case key_alg::es256:
      return JWT_ALG_ES256;
  }
  return JWT_ALG_INVAL;
}

// Signature sizes libjwt does not pin itself: its HMAC check compares
// strings (a longer signature with the right prefix must not pass), and an
// ES256 signature is R||S of 32 bytes each.
bool signature_size_fits(key_alg a, std::size_t bytes) {
  switch (a) {
    case key_alg::hs256:
      return bytes == 32;
    case key_alg::es256:
      return bytes == 64;
    case key_alg::rs256:
      return bytes >= 256 && bytes <= 2048;  // 2048- to 16384-bit moduli
  }
  return false;
}

struct jwt_deleter {
  void operator()(jwt_t* j) const { jwt_free(j); }
};

// libjwt with the key's own material, and success only when libjwt agrees
// the token used the key's algorithm.
bool signature_verifies(const std::string& token, const verification_key& key) {
  // An empty key would make libjwt skip the check altogether.
  if (key.material.empty() || key.material.size() > static_cast<std::size_t>(INT_MAX)) return false;
  jwt_t* raw = nullptr;
  int rc = jwt_decode(&raw, token.c_str(), reinterpret_cast<const unsigned char*>(key.material.data()),
                      static_cast<int>(key.material.size()));
  std::unique_ptr<jwt_t, jwt_deleter> decoded(raw);
  // libjwt leaves OpenSSL's per-thread error queue filled on a failure.
  ERR_clear_error();
  return rc == 0 && decoded && jwt_get_alg(decoded.get()) == libjwt_alg(key.alg);
}

}  // namespace

verify_result verify_token(std::string_view token, const std::vector<tenant_spec>& tenants,
                           std::int64_t now_seconds) {
  if (token.empty()) return refuse(token_problem::malformed, "token is empty");
  if (token.size() > max_token_bytes)
    return refuse(token_problem::malformed, "token is longer than 8192 bytes");
  auto dot1 = token.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return refuse(token_problem::malformed, "token is not a JWS (three base64url parts separated by '.')");
  auto header_text = base64url_decode(token.substr(0, dot1));
  auto payload_text = base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto signature = base64url_decode(token.substr(dot2 + 1));
  if (!header_text || !payload_text || !signature)
    return refuse(token_problem::malformed, "token parts are not unpadded base64url");

  auto header = json::parse(*header_text, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return refuse(token_problem::malformed, "token header is not a JSON object");
  auto alg_it = header.find("alg");
  if (alg_it == header.end() || !alg_it->is_string())
    return refuse(token_problem::malformed, "token header has no alg");
  const auto& alg_name = alg_it->get_ref<const std::string&>();
  if (iequals(alg_name, "none")) return refuse(token_problem::algorithm, "alg none is not accepted");
  key_alg alg;
  if (alg_name == "HS256")
    alg = key_alg::hs256;
  else if (alg_name == "RS256")
    alg = key_alg::rs256;
  else if (alg_name == "ES256")
    alg = key_alg::es256;
  else
    return refuse(token_problem::algorithm, "unsupported alg " + printable(alg_name));
  // libjwt refuses any other typ; say so rather than blame the signature.
  if (auto typ = header.find("typ");
      typ != header.end() && (!typ->is_string() || !iequals(typ->get_ref<const std::string&>(), "JWT")))
    return refuse(token_problem::malformed, "token typ must be JWT");
  // RFC 7515 4.1.11: extensions we do not understand must be refused.
  if (header.contains("crit")) return refuse(token_problem::malformed, "token header crit is not supported");
  std::optional<std::string> kid;
  if (auto it = header.find("kid"); it != header.end()) {
    if (!it->is_string()) return refuse(token_problem::malformed, "token header kid must be a string");
    kid = it->get<std::string>();
  }

  // Unverified: only to know whose keys to try.
  auto payload = json::parse(*payload_text, nullptr, false);
  if (payload.is_discarded() || !payload.is_object())
    return refuse(token_problem::malformed, "token payload is not a JSON object");
  auto tenant_it = payload.find("tenant");
  if (tenant_it == payload.end()) return refuse(token_problem::claims, "token has no 'tenant' claim");
  if (!tenant_it->is_string() || tenant_it->get_ref<const std::string&>().empty())
    return refuse(token_problem::claims, "claim 'tenant' must be a non-empty string");
  const auto& tenant_id = tenant_it->get_ref<const std::string&>();
  // libjwt cannot read a date past 64 bits and then fails the signature:
  // name the claim instead (issue 28).
  for (const char* name : {"exp", "nbf", "iat"})
    if (auto it = payload.find(name); it != payload.end() && !core::numeric_date(*it))
      return refuse(token_problem::claims,
                    std::string("claim '") + name + "' must be a number of seconds (below 9e15)");

  const tenant_spec* tenant = nullptr;
  for (const auto& t : tenants)
    if (t.id == tenant_id) tenant = &t;
  std::vector<std::size_t> candidates;
  if (tenant)
    for (std::size_t i = 0; i < tenant->keys.size(); ++i) {
      const auto& k = tenant->keys[i];
      if (k.alg == alg && (!kid || k.kid == *kid)) candidates.push_back(i);
    }
  // Which tenants exist, and which of their keys, must not show: "unknown
  // kid" only for a kid no tenant of the node has (kids are not secret);
  // every other miss reads as a bad signature.
  if (candidates.empty()) {
    bool kid_known = false;
    for (const auto& t : tenants)
      for (const auto& k : t.keys) kid_known = kid_known || (kid && k.kid == *kid);
    if (kid && !kid_known) return refuse(token_problem::unknown_key, "unknown kid");
    return refuse(token_problem::signature, "signature does not verify");
  }

  std::optional<std::size_t> verified;
  if (signature_size_fits(alg, signature->size())) {
    std::string token_z(token);  // libjwt wants a C string
    for (auto i : candidates)
      if (signature_verifies(token_z, tenant->keys[i])) {
        verified = i;
        break;
      }
  }
  if (!verified) return refuse(token_problem::signature, "signature does not verify");

  auto claims = core::map_claims(*payload_text, now_seconds);
  if (!claims.value) return refuse(claims.problem, std::move(claims.error));
  // The same bytes were read twice; a mismatch would be a parser bug.
  if (claims.value->tenant != tenant->id) return refuse(token_problem::claims, "claim 'tenant' is ambiguous");
  verify_result r;
  r.principal = std::move(claims.value);
  r.key_id = key_id(*tenant, *verified);
  return r;
}

}  // namespace tidings::broker
