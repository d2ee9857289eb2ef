#include "broker/jwt_verifier.hpp"

#include <catch2/catch.hpp>

#include "tests/support/jwt_mint.hpp"

using namespace tidings::broker;
using tidings::core::token_problem;
using json = nlohmann::json;
namespace testing = tidings::testing;

namespace {

constexpr std::int64_t now = 1'800'000'000;

const std::string secret_a1 = "acme-secret-one-0123456789abcdef-0123";
const std::string secret_a2 = "acme-secret-two-0123456789abcdef-0123";
const std::string secret_b = "beta-secret-0123456789abcdef-0123456";

// Generated once: RSA key generation takes a while.
struct keys {
  testing::key_pair rsa_a = testing::generate_rsa();
  testing::key_pair rsa_b = testing::generate_rsa();
  testing::key_pair ec_a = testing::generate_p256();
  testing::key_pair ec_b = testing::generate_p256();
};
const keys& k() {
  static const keys all;
  return all;
}

verification_key key(std::string kid, key_alg alg, std::string material) {
  return verification_key{std::move(kid), alg, std::move(material)};
}

// acme: two HS256 keys (rotation), an RS256 key without a kid, an ES256 key.
// beta: its own HS256, RS256 and ES256 keys. rsa-only: just acme's RSA key.
const std::vector<tenant_spec>& tenants() {
  static const std::vector<tenant_spec> all = [] {
    std::vector<tenant_spec> t(3);
    t[0].id = "acme";
    t[0].keys = {key("kid-alpha-1", key_alg::hs256, secret_a1), key("kid-alpha-2", key_alg::hs256, secret_a2),
                 key("", key_alg::rs256, k().rsa_a.public_pem),
                 key("kid-ec-1", key_alg::es256, k().ec_a.public_pem)};
    t[1].id = "beta";
    t[1].keys = {key("", key_alg::hs256, secret_b), key("", key_alg::rs256, k().rsa_b.public_pem)};
    t[2].id = "rsa-only";
    t[2].keys = {key("", key_alg::rs256, k().rsa_a.public_pem)};
    return t;
  }();
  return all;
}

json claims(const std::string& tenant, const std::string& sub = "ann") {
  return {{"tenant", tenant}, {"sub", sub}, {"exp", now + 60}, {"tidings", {{"read", {"docs:/a/**"}}}}};
}

verify_result verify(const std::string& token) {
  return verify_token(token, tenants(), now);
}

// Every refusal: no principal, the problem and the exact words, and nothing
// about the keys in them.
void check_refused(const verify_result& r, token_problem p, const std::string& error) {
  CHECK_FALSE(r.principal);
  CHECK(r.problem == p);
  CHECK(r.error == error);
  CHECK(r.key_id.empty());
  for (const auto& secret : {secret_a1, secret_a2, secret_b})
    CHECK(r.error.find(secret.substr(0, 10)) == std::string::npos);
  for (const auto* kid : {"kid-alpha-1", "kid-alpha-2", "kid-ec-1", "acme#", "beta#", "BEGIN"})
    CHECK(r.error.find(kid) == std::string::npos);
}

std::vector<std::string> split(const std::string& token) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (;;) {
    auto dot = token.find('.', pos);
    parts.push_back(token.substr(pos, dot - pos));
    if (dot == std::string::npos) return parts;
    pos = dot + 1;
  }
}

}  // namespace

TEST_CASE("jwt_verifier: HS256, RS256 and ES256 tokens verify") {
  SECTION("HS256 with a kid") {
    auto r = verify(testing::mint(key_alg::hs256, secret_a1, claims("acme"), "kid-alpha-1"));
    REQUIRE(r.principal);
    CHECK(r.problem == token_problem::none);
    CHECK(r.error.empty());
    CHECK(r.key_id == "acme#kid-alpha-1");
    CHECK(r.principal->tenant == "acme");
    CHECK(r.principal->subject == "ann");
    CHECK(r.principal->expires_at == now + 60);
    CHECK(r.principal->read.covers("docs", "/a/b"));
    CHECK_FALSE(r.principal->read.covers("docs", "/b"));
  }
  SECTION("RS256 from a key without a kid") {
    auto r = verify(testing::mint(key_alg::rs256, k().rsa_a.private_pem, claims("acme")));
    REQUIRE(r.principal);
    CHECK(r.key_id.starts_with("acme#sha256:"));  // a kid-less key: its fingerprint
  }
  SECTION("ES256, as libjwt mints it (R||S)") {
    auto token = testing::mint(key_alg::es256, k().ec_a.private_pem, claims("acme"), "kid-ec-1");
    auto parts = split(token);
    REQUIRE(parts.size() == 3);
    CHECK(parts[2].size() == 86);  // 64 bytes, unpadded base64url
    auto r = verify(token);
    REQUIRE(r.principal);
    CHECK(r.key_id == "acme#kid-ec-1");
    // And without the kid: the only ES256 key of the tenant.
    auto r2 = verify(testing::mint(key_alg::es256, k().ec_a.private_pem, claims("acme")));
    REQUIRE(r2.principal);
    CHECK(r2.key_id == "acme#kid-ec-1");
  }
  SECTION("beta's own keys") {
    auto r = verify(testing::mint(key_alg::hs256, secret_b, claims("beta", "bob")));
    REQUIRE(r.principal);
    CHECK(r.principal->tenant == "beta");
    CHECK(r.key_id.starts_with("beta#sha256:"));
    auto rs = verify(testing::mint(key_alg::rs256, k().rsa_b.private_pem, claims("beta"))).key_id;
    CHECK(rs.starts_with("beta#sha256:"));
    CHECK(rs != r.key_id);
  }
}

TEST_CASE("jwt_verifier: rotation: both keys of one alg verify, picked by kid or tried in turn") {
  auto by_kid_1 = verify(testing::mint(key_alg::hs256, secret_a1, claims("acme"), "kid-alpha-1"));
  auto by_kid_2 = verify(testing::mint(key_alg::hs256, secret_a2, claims("acme"), "kid-alpha-2"));
  REQUIRE(by_kid_1.principal);
  REQUIRE(by_kid_2.principal);
  CHECK(by_kid_1.key_id == "acme#kid-alpha-1");
  CHECK(by_kid_2.key_id == "acme#kid-alpha-2");
  auto no_kid_1 = verify(testing::mint(key_alg::hs256, secret_a1, claims("acme")));
  auto no_kid_2 = verify(testing::mint(key_alg::hs256, secret_a2, claims("acme")));
  REQUIRE(no_kid_1.principal);
  REQUIRE(no_kid_2.principal);
  CHECK(no_kid_1.key_id == "acme#kid-alpha-1");
  CHECK(no_kid_2.key_id == "acme#kid-alpha-2");
}

TEST_CASE("jwt_verifier: a kid selects its key only") {
  SECTION("a kid the tenant does not have") {
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, claims("acme"), "kid-alpha-9")),
                  token_problem::unknown_key, "unknown kid");
  }
  SECTION("a kid of another alg reads as a bad signature (the kid exists)") {
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, claims("acme"), "kid-ec-1")),
                  token_problem::signature, "signature does not verify");
  }
  SECTION("signed with one key, naming the other") {
    check_refused(verify(testing::mint(key_alg::hs256, secret_a2, claims("acme"), "kid-alpha-1")),
                  token_problem::signature, "signature does not verify");
  }
  SECTION("a kid that is not a string") {
    check_refused(verify(testing::mint_unsigned({{"alg", "HS256"}, {"kid", 1}}, claims("acme"), "AAAA")),
                  token_problem::malformed, "token header kid must be a string");
  }
}

TEST_CASE("jwt_verifier: alg none is refused, with or without a signature, in any case") {
  for (const auto* alg : {"none", "NONE", "None", "nOnE"}) {
    INFO(alg);
    check_refused(verify(testing::mint_unsigned({{"alg", alg}}, claims("acme"))), token_problem::algorithm,
                  "alg none is not accepted");
    check_refused(
        verify(testing::mint_unsigned({{"alg", alg}, {"typ", "JWT"}}, claims("acme"), "c2lnbmF0dXJl")),
        token_problem::algorithm, "alg none is not accepted");
  }
  // Signed for real, then relabelled none.
  auto parts = split(testing::mint(key_alg::hs256, secret_a1, claims("acme")));
  auto relabelled = testing::base64url(R"({"alg":"none","typ":"JWT"})") + "." + parts[1] + "." + parts[2];
  check_refused(verify(relabelled), token_problem::algorithm, "alg none is not accepted");
}

TEST_CASE("jwt_verifier: algs other than HS256, RS256 and ES256 are refused") {
  check_refused(verify(testing::mint_unsigned({{"alg", "HS512"}}, claims("acme"), "AAAA")),
                token_problem::algorithm, "unsupported alg HS512");
  check_refused(verify(testing::mint_unsigned({{"alg", "hs256"}}, claims("acme"), "AAAA")),
                token_problem::algorithm, "unsupported alg hs256");
  check_refused(verify(testing::mint_unsigned({{"alg", "PS256"}}, claims("acme"), "AAAA")),
                token_problem::algorithm, "unsupported alg PS256");
  // A long or unprintable alg is cut short and made printable in the message.
  check_refused(
      verify(testing::mint_unsigned({{"alg", std::string(40, 'X') + "\n"}}, claims("acme"), "AAAA")),
      token_problem::algorithm, "unsupported alg " + std::string(32, 'X') + "...");
  check_refused(verify(testing::mint_unsigned({{"typ", "JWT"}}, claims("acme"), "AAAA")),
                token_problem::malformed, "token header has no alg");
  check_refused(verify(testing::mint_unsigned({{"alg", 256}}, claims("acme"), "AAAA")),
                token_problem::malformed, "token header has no alg");
}

TEST_CASE("jwt_verifier: algorithm confusion: an RSA public key is never an HMAC secret") {
  SECTION("a tenant with only an RS256 key") {
    auto forged = testing::mint(key_alg::hs256, k().rsa_a.public_pem, claims("rsa-only"));
    check_refused(verify(forged), token_problem::signature, "signature does not verify");
  }
  SECTION("a tenant with HS256 and RS256 keys tries only its HS256 secrets") {
    auto forged = testing::mint(key_alg::hs256, k().rsa_a.public_pem, claims("acme"));
    check_refused(verify(forged), token_problem::signature, "signature does not verify");
  }
  SECTION("an ES256 header on an RS256 signature") {
    auto parts = split(testing::mint(key_alg::rs256, k().rsa_a.private_pem, claims("acme")));
    auto relabelled = testing::base64url(R"({"alg":"ES256","typ":"JWT"})") + "." + parts[1] + "." + parts[2];
    check_refused(verify(relabelled), token_problem::signature, "signature does not verify");
  }
}

TEST_CASE("jwt_verifier: a wrong signature or a tampered token does not verify") {
  auto token = testing::mint(key_alg::hs256, secret_a1, claims("acme"));
  auto parts = split(token);
  SECTION("a different signature of the right size") {
    auto sig = parts[2];
    sig[5] = sig[5] == 'A' ? 'B' : 'A';
    check_refused(verify(parts[0] + "." + parts[1] + "." + sig), token_problem::signature,
                  "signature does not verify");
  }
  SECTION("the right signature with more after it") {
    // 43 + 3 characters: still canonical base64url, but 34 bytes.
    check_refused(verify(token + "AAA"), token_problem::signature, "signature does not verify");
  }
  SECTION("an empty signature") {
    check_refused(verify(parts[0] + "." + parts[1] + "."), token_problem::signature,
                  "signature does not verify");
  }
  SECTION("a tampered payload") {
    auto more = claims("acme");
    more["tidings"]["admin"] = true;
    check_refused(verify(parts[0] + "." + testing::base64url(more.dump()) + "." + parts[2]),
                  token_problem::signature, "signature does not verify");
  }
  SECTION("a tampered header") {
    auto header = testing::base64url(R"({"alg":"HS256","typ":"JWT","kid":"kid-alpha-1"})");
    check_refused(verify(header + "." + parts[1] + "." + parts[2]), token_problem::signature,
                  "signature does not verify");
  }
  SECTION("an ES256 signature of the wrong size") {
    auto es = split(testing::mint(key_alg::es256, k().ec_a.private_pem, claims("acme")));
    check_refused(verify(es[0] + "." + es[1] + "." + es[2].substr(0, 84)), token_problem::signature,
                  "signature does not verify");
  }
  SECTION("signed by another key of the same alg") {
    check_refused(verify(testing::mint(key_alg::es256, k().ec_b.private_pem, claims("acme"))),
                  token_problem::signature, "signature does not verify");
    check_refused(verify(testing::mint(key_alg::rs256, k().rsa_b.private_pem, claims("acme"))),
                  token_problem::signature, "signature does not verify");
  }
}

TEST_CASE("jwt_verifier: a key with no material verifies nothing") {
  // libjwt skips the check when given no key; the verifier must not.
  std::vector<tenant_spec> t(1);
  t[0].id = "acme";
  t[0].keys = {key("", key_alg::hs256, "")};
  auto forged = testing::mint_unsigned({{"alg", "HS256"}, {"typ", "JWT"}}, claims("acme"),
                                       testing::base64url(std::string(32, '\0')));
  auto r = verify_token(forged, t, now);
  CHECK_FALSE(r.principal);
  CHECK(r.problem == token_problem::signature);
}

TEST_CASE("jwt_verifier: the claims are checked after the signature") {
  SECTION("expired") {
    auto c = claims("acme");
    c["exp"] = now - 1;
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::expired,
                  "token expired");
    c["exp"] = now;
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::expired,
                  "token expired");
  }
  SECTION("nbf in the future") {
    auto c = claims("acme");
    c["nbf"] = now + 10;
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::not_yet_valid,
                  "token not yet valid (nbf)");
    c["nbf"] = now;
    CHECK(verify(testing::mint(key_alg::hs256, secret_a1, c)).principal);
  }
  SECTION("no exp") {
    auto c = claims("acme");
    c.erase("exp");
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::claims,
                  "token has no 'exp' claim");
  }
  SECTION("no sub") {
    auto c = claims("acme");
    c.erase("sub");
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::claims,
                  "token has no 'sub' claim");
  }
  SECTION("no tenant") {
    auto c = claims("acme");
    c.erase("tenant");
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::claims,
                  "token has no 'tenant' claim");
    c["tenant"] = 7;
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::claims,
                  "claim 'tenant' must be a non-empty string");
  }
  SECTION("a date past 64 bits is named, not taken for a bad signature (issue 28)") {
    for (auto huge : {json(1e20), json(9'000'000'000'000'000LL)}) {
      INFO(huge.dump());
      auto c = claims("acme");
      c["exp"] = huge;
      check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::claims,
                    "claim 'exp' must be a number of seconds (below 9e15)");
    }
    auto c = claims("acme");
    c["iat"] = 1e300;
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, c)), token_problem::claims,
                  "claim 'iat' must be a number of seconds (below 9e15)");
    c["iat"] = now - 5;
    c["exp"] = 8'999'999'999'999'999LL;  // far off, and fine
    CHECK(verify(testing::mint(key_alg::hs256, secret_a1, c)).principal);
  }
  SECTION("an expired token with a bad signature is a signature problem") {
    auto c = claims("acme");
    c["exp"] = now - 1;
    check_refused(verify(testing::mint(key_alg::hs256, secret_b, c)), token_problem::signature,
                  "signature does not verify");
  }
}

TEST_CASE("jwt_verifier: one tenant's keys never verify another tenant's tokens") {
  SECTION("signed by beta, claiming acme") {
    check_refused(verify(testing::mint(key_alg::hs256, secret_b, claims("acme"))), token_problem::signature,
                  "signature does not verify");
    check_refused(verify(testing::mint(key_alg::rs256, k().rsa_b.private_pem, claims("acme"))),
                  token_problem::signature, "signature does not verify");
  }
  SECTION("signed by acme, claiming beta") {
    check_refused(verify(testing::mint(key_alg::hs256, secret_a1, claims("beta"))), token_problem::signature,
                  "signature does not verify");
  }
  SECTION("beta's payload with acme's tenant claim swapped in") {
    auto parts = split(testing::mint(key_alg::hs256, secret_b, claims("beta")));
    check_refused(verify(parts[0] + "." + testing::base64url(claims("acme").dump()) + "." + parts[2]),
                  token_problem::signature, "signature does not verify");
  }
}

TEST_CASE("jwt_verifier: an unknown tenant or a missing key reads as a bad signature") {
  auto unknown_tenant = verify(testing::mint(key_alg::hs256, secret_a1, claims("nobody")));
  auto no_es_key = verify(testing::mint(key_alg::es256, k().ec_b.private_pem, claims("beta")));
  auto wrong_secret = verify(testing::mint(key_alg::hs256, secret_b, claims("acme")));
  check_refused(unknown_tenant, token_problem::signature, "signature does not verify");
  check_refused(no_es_key, token_problem::signature, "signature does not verify");
  check_refused(wrong_secret, token_problem::signature, "signature does not verify");
  // A kid some tenant has: still a bad signature, wherever it is sent.
  check_refused(verify(testing::mint(key_alg::hs256, secret_a1, claims("nobody"), "kid-alpha-1")),
                token_problem::signature, "signature does not verify");
  check_refused(verify(testing::mint(key_alg::hs256, secret_b, claims("beta"), "kid-alpha-1")),
                token_problem::signature, "signature does not verify");
  // A kid no tenant has is named as such, whatever the tenant.
  check_refused(verify(testing::mint(key_alg::hs256, secret_a1, claims("nobody"), "kid-nowhere")),
                token_problem::unknown_key, "unknown kid");
  check_refused(verify(testing::mint(key_alg::hs256, secret_a1, claims("acme"), "kid-nowhere")),
                token_problem::unknown_key, "unknown kid");
  // No tenants configured at all.
  check_refused(verify_token(testing::mint(key_alg::hs256, secret_a1, claims("acme")), {}, now),
                token_problem::signature, "signature does not verify");
}

TEST_CASE("jwt_verifier: tokens that are not JWS are malformed") {
  const std::string shape = "token is not a JWS (three base64url parts separated by '.')";
  const std::string b64 = "token parts are not unpadded base64url";
  auto good = testing::mint(key_alg::hs256, secret_a1, claims("acme"));
  auto parts = split(good);
  check_refused(verify(""), token_problem::malformed, "token is empty");
  check_refused(verify("garbage"), token_problem::malformed, shape);
  check_refused(verify("a.b"), token_problem::malformed, shape);
  check_refused(verify(good + ".AAAA"), token_problem::malformed, shape);
  check_refused(verify("..."), token_problem::malformed, shape);
  check_refused(verify(".."), token_problem::malformed, "token header is not a JSON object");
  check_refused(verify("Bearer " + good), token_problem::malformed, b64);
  check_refused(verify(good + "="), token_problem::malformed, b64);
  check_refused(verify(parts[0] + "=." + parts[1] + "." + parts[2]), token_problem::malformed, b64);
  check_refused(verify(parts[0] + "." + parts[1] + "+." + parts[2]), token_problem::malformed, b64);
  check_refused(verify(parts[0] + " ." + parts[1] + "." + parts[2]), token_problem::malformed, b64);
  // Standard base64's alphabet is not base64url's.
  auto slashed = testing::mint_unsigned({{"alg", "HS256"}}, claims("acme"), "ab/c");
  check_refused(verify(slashed), token_problem::malformed, b64);
  // A length no base64url text has (4n + 1).
  check_refused(verify(parts[0] + "." + parts[1] + ".AAAAA"), token_problem::malformed, b64);
  // "QR" decodes to 'A' only if the spare bits are zero: "QQ" is the one text.
  check_refused(verify(parts[0] + "." + parts[1] + ".QR"), token_problem::malformed, b64);
  check_refused(verify(testing::base64url("[1]") + "." + parts[1] + "." + parts[2]), token_problem::malformed,
                "token header is not a JSON object");
  check_refused(verify(testing::base64url("{\"alg\":") + "." + parts[1] + "." + parts[2]),
                token_problem::malformed, "token header is not a JSON object");
  check_refused(verify(parts[0] + "." + testing::base64url("[\"tenant\"]") + "." + parts[2]),
                token_problem::malformed, "token payload is not a JSON object");
  check_refused(verify(parts[0] + ".." + parts[2]), token_problem::malformed,
                "token payload is not a JSON object");
  check_refused(verify(testing::mint_unsigned({{"alg", "HS256"}, {"typ", "at+jwt"}}, claims("acme"), "AAAA")),
                token_problem::malformed, "token typ must be JWT");
  check_refused(verify(testing::mint_unsigned({{"alg", "HS256"}, {"crit", {"exp"}}}, claims("acme"), "AAAA")),
                token_problem::malformed, "token header crit is not supported");
}

TEST_CASE("jwt_verifier: a token is at most 8 KiB") {
  auto sized = [](std::size_t filler) {
    auto c = claims("acme");
    c["pad"] = std::string(filler, 'x');
    return testing::mint(key_alg::hs256, secret_a1, c);
  };
  // Find the largest filler that stays within the bound.
  std::size_t filler = 5000;
  while (sized(filler + 1).size() <= max_token_bytes) ++filler;
  auto at_limit = sized(filler);
  auto over = sized(filler + 1);
  CHECK(at_limit.size() <= max_token_bytes);
  CHECK(over.size() > max_token_bytes);
  CHECK(verify(at_limit).principal);
  check_refused(verify(over), token_problem::malformed, "token is longer than 8192 bytes");
  check_refused(verify(std::string(1 << 20, 'a')), token_problem::malformed,
                "token is longer than 8192 bytes");
}
