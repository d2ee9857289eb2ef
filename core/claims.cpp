#include "core/claims.hpp"

namespace tidings::core {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_grants = 256;

claims_result refuse(token_problem p, std::string why) {
  claims_result r;
  r.problem = p;
  r.error = std::move(why);
  return r;
}

// Empty entries are refused rather than skipped: a scope expression that
// tests has("") should never be satisfied by a sloppy token. `scopes`
// entries are OAuth scope tokens (RFC 6749 3.3: %x21 / %x23-5B / %x5D-7E),
// the same as the words of a `scope` string.
bool is_scope_token(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e) return false;
  return true;
}

std::optional<std::string> string_list(const json& j, const char* name, std::vector<std::string>& out,
                                       bool scope_tokens = false) {
  auto it = j.find(name);
  if (it == j.end()) return std::nullopt;
  std::string expected = std::string("claim ") + name + " must be an array of non-empty strings" +
                         (scope_tokens ? " of printable ASCII without spaces, quotes or backslashes" : "");
  if (!it->is_array()) return expected;
  for (const auto& v : *it) {
    if (!v.is_string()) return expected;
    const auto& text = v.get_ref<const std::string&>();
    if (text.empty() || (scope_tokens && !is_scope_token(text))) return expected;
    out.push_back(text);
  }
  return std::nullopt;
}

std::optional<std::string> grants(const json& tidings, const char* name, grant_set& out) {
  auto it = tidings.find(name);
  if (it == tidings.end()) return std::nullopt;
  if (!it->is_array()) return std::string("claim tidings.") + name + " must be an array of grants";
  if (it->size() > max_grants) return std::string("claim tidings.") + name + " has more than 256 grants";
  std::vector<grant> list;
  for (const auto& v : *it) {
    if (!v.is_string()) return std::string("claim tidings.") + name + " must be an array of strings";
    std::string why;
    auto g = parse_grant(v.get_ref<const std::string&>(), &why);
    if (!g)
      return std::string("claim tidings.") + name + ": bad grant '" + v.get<std::string>() + "': " + why;
    list.push_back(std::move(*g));
  }
  out = grant_set(std::move(list));
  return std::nullopt;
}

}  // namespace

// NumericDate: seconds, possibly fractional (RFC 7519 4.1.4).
std::optional<std::int64_t> numeric_date(const nlohmann::json& j) {
  // Past 9e15 s (285 million years) a date means nothing, and an unsigned
  // above INT64_MAX would wrap to a date in the past.
  constexpr std::int64_t limit = 9'000'000'000'000'000;
  if (j.is_number_unsigned()) {
    auto v = j.get<std::uint64_t>();
    if (v < static_cast<std::uint64_t>(limit)) return static_cast<std::int64_t>(v);
    return std::nullopt;
  }
  if (j.is_number_integer()) {
    auto v = j.get<std::int64_t>();
    if (v > -limit && v < limit) return v;
    return std::nullopt;
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (d > -9e15 && d < 9e15) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

std::string_view token_problem_name(token_problem p) {
  switch (p) {
    case token_problem::none:
      return "none";
    case token_problem::malformed:
      return "malformed";
    case token_problem::algorithm:
      return "algorithm";
    case token_problem::unknown_key:
      return "unknown_key";
    case token_problem::signature:
      return "signature";
    case token_problem::expired:
      return "expired";
    case token_problem::not_yet_valid:
      return "not_yet_valid";
    case token_problem::claims:
      return "claims";
    case token_problem::revoked:
      return "revoked";
  }
  return "unknown";
}

claims_result map_claims(std::string_view payload_json, std::int64_t now_seconds) {
  // nlohmann stops at a NUL byte and would ignore what follows it.
  if (payload_json.find('\0') != std::string_view::npos)
    return refuse(token_problem::malformed, "token payload is not a JSON object");
  json j = json::parse(payload_json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return refuse(token_problem::malformed, "token payload is not a JSON object");
  principal p;
  auto text = [&](const char* name, std::string& out, bool required) -> std::optional<claims_result> {
    auto it = j.find(name);
    if (it == j.end()) {
      if (required) return refuse(token_problem::claims, std::string("token has no '") + name + "' claim");
      return std::nullopt;
    }
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return refuse(token_problem::claims, std::string("claim '") + name + "' must be a non-empty string");
    out = it->get<std::string>();
    return std::nullopt;
  };
  if (auto r = text("tenant", p.tenant, true)) return *r;
  if (auto r = text("sub", p.subject, true)) return *r;
  if (auto r = text("jti", p.jti, false)) return *r;

  auto exp = j.find("exp");
  if (exp == j.end()) return refuse(token_problem::claims, "token has no 'exp' claim");
  auto exp_value = numeric_date(*exp);
  if (!exp_value)
    return refuse(token_problem::claims, "claim 'exp' must be a number of seconds (below 9e15)");
  p.expires_at = *exp_value;
  for (auto [name, slot] : {std::pair{"nbf", &p.not_before}, std::pair{"iat", &p.issued_at}}) {
    auto it = j.find(name);
    if (it == j.end()) continue;
    auto v = numeric_date(*it);
    if (!v)
      return refuse(token_problem::claims, std::string("claim '") + name + "' must be a number of seconds");
    *slot = *v;
  }
  if (p.expires_at <= now_seconds) return refuse(token_problem::expired, "token expired");
  if (p.not_before && *p.not_before > now_seconds)
    return refuse(token_problem::not_yet_valid, "token not yet valid (nbf)");
  // A subject's revocation refuses tokens issued before it; an iat in the
  // future would slip past it (a minute of clock skew is allowed).
  if (p.issued_at && *p.issued_at > now_seconds + 60)
    return refuse(token_problem::not_yet_valid, "token not yet valid (issued in the future)");

  if (auto it = j.find("tidings"); it != j.end()) {
    if (!it->is_object()) return refuse(token_problem::claims, "claim 'tidings' must be an object");
    if (auto err = grants(*it, "read", p.read)) return refuse(token_problem::claims, *err);
    if (auto err = grants(*it, "write", p.write)) return refuse(token_problem::claims, *err);
    if (auto admin = it->find("admin"); admin != it->end()) {
      if (!admin->is_boolean())
        return refuse(token_problem::claims, "claim tidings.admin must be true or false");
      p.admin = admin->get<bool>();
    }
  }
  if (auto err = string_list(j, "roles", p.roles)) return refuse(token_problem::claims, *err);
  if (auto err = string_list(j, "groups", p.groups)) return refuse(token_problem::claims, *err);
  if (auto err = string_list(j, "scopes", p.scopes, true)) return refuse(token_problem::claims, *err);
  if (auto it = j.find("scope"); it != j.end()) {
    if (!it->is_string())
      return refuse(token_problem::claims, "claim 'scope' must be a space-separated string");
    std::string_view s = it->get_ref<const std::string&>();
    while (!s.empty()) {
      auto sp = s.find(' ');
      auto word = s.substr(0, sp);
      if (!is_scope_token(word) && !word.empty())
        return refuse(token_problem::claims, "claim 'scope' holds a character OAuth scopes cannot have");
      if (sp != 0) p.scopes.emplace_back(word);
      if (sp == std::string_view::npos) break;
      s.remove_prefix(sp + 1);
    }
  }
  if (auto it = j.find("attributes"); it != j.end()) {
    if (!it->is_object()) return refuse(token_problem::claims, "claim 'attributes' must be an object");
    p.attributes = *it;
  }
  claims_result r;
  r.value = std::move(p);
  return r;
}

}  // namespace tidings::core
