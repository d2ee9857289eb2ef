#pragma once

// What a verified token says: the JWT payload mapped to a principal. The
// signature is checked elsewhere (broker/jwt_verifier); this is the pure
// part, so it can be tested and fuzzed on its own.
//
// Claims: tenant, sub and exp are required; nbf, iat and jti optional;
// `tidings`: {"read": [grant...], "write": [grant...], "admin": bool}; for
// notification scoping also roles, groups (arrays of strings), scope (an
// OAuth space-separated string) or scopes (array) and attributes (object).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/grant.hpp"

namespace tidings::core {

struct principal {
  std::string tenant;
  std::string subject;
  std::string jti;  // empty when the token has none
  std::int64_t expires_at = 0;
  std::optional<std::int64_t> not_before;
  std::optional<std::int64_t> issued_at;
  grant_set read;
  grant_set write;
  bool admin = false;
  std::vector<std::string> roles, groups, scopes;
  nlohmann::json attributes = nlohmann::json::object();
};

// Why a token is refused; names the label of tidings_unauthorized_total.
enum class token_problem {
  none,
  malformed,
  algorithm,
  unknown_key,
  signature,
  expired,
  not_yet_valid,
  claims,
  revoked
};
std::string_view token_problem_name(token_problem p);

struct claims_result {
  std::optional<principal> value;
  token_problem problem = token_problem::none;
  std::string error;  // for the 401 body; never names a key
};

claims_result map_claims(std::string_view payload_json, std::int64_t now_seconds);

// A NumericDate claim (exp, nbf, iat) as seconds; nullopt when it is not a
// number or beyond 9e15 s either way.
std::optional<std::int64_t> numeric_date(const nlohmann::json& j);

}  // namespace tidings::core
