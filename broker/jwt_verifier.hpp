#pragma once

// Checks a bearer token (a compact JWS) against the configured tenants' keys
// and maps its claims to a principal (core::map_claims).
//
// The token's header only *selects* keys: its `alg` must be one a key of the
// claimed tenant is configured for, and the signature is checked with that
// key under that key's algorithm, so an RSA public key can never serve as an
// HMAC secret (alg confusion) and `none` is never accepted. The unverified
// payload is read for one thing only: its `tenant` claim, which says whose
// keys to try; a token signed by tenant B that claims tenant A is checked
// against A's keys alone and fails.
//
// Order of checks, each with its token_problem:
//   size <= 8 KiB, three strict base64url parts, header a JSON object with
//   a string alg, typ absent or "JWT", no crit              -> malformed
//   alg "none" (any case), or not HS256/RS256/ES256          -> algorithm
//   payload a JSON object with a non-empty string tenant    -> malformed/claims
//   a key of that tenant for this alg (and kid, if given)    -> unknown_key
//   the signature verifies with one of them                  -> signature
//   exp, nbf and the other claims (core::map_claims)         -> expired, ...
//
// The error text goes into a 401 body: it says which check failed, never
// which key was tried or what it holds, and reads the same whether or not
// the claimed tenant exists (up to the signature check).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/tenant_config.hpp"
#include "core/claims.hpp"

namespace tidings::broker {

struct verify_result {
  std::optional<core::principal> principal;
  core::token_problem problem = core::token_problem::none;
  std::string error;   // for a 401 body: says which check failed, never which key was tried or what it is
  std::string key_id;  // with a principal: key_id(tenant, index) of the key that verified it, so a
                       // reload can tell whether that key is still configured
};

inline constexpr std::size_t max_token_bytes = 8 << 10;

verify_result verify_token(std::string_view token, const std::vector<tenant_spec>& tenants,
                           std::int64_t now_seconds);

}  // namespace tidings::broker
