// The cache of verified tokens (issue 27): bounded, keyed by the whole
// token, and behind auth_service a hit still honours what can change after
// a verification: a revocation, a reload that removes the key.

#include <catch2/catch.hpp>

#include <chrono>

#include <nlohmann/json.hpp>

#include "broker/auth_service.hpp"
#include "broker/verified_tokens.hpp"
#include "tests/support/jwt_mint.hpp"
#include "tests/support/tidingsd_process.hpp"

using namespace tidings;
using nlohmann::json;

namespace {

broker::session_auth_ptr auth_for(const std::string& subject) {
  auto a = std::make_shared<broker::session_auth>();
  a->who.subject = subject;
  return a;
}

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

broker::http_request bearer(const std::string& token) {
  broker::http_request req;
  req.method = "POST";
  req.path = "/v1/streams/docs/events";
  req.headers["authorization"] = "Bearer " + token;
  return req;
}

}  // namespace

TEST_CASE("verified_tokens keeps the newest entries, each for its exact token", "[auth][verified_tokens]") {
  broker::verified_tokens cache(2);
  cache.remember("token-a", auth_for("a"));
  cache.remember("token-b", auth_for("b"));
  REQUIRE(cache.find("token-a"));
  CHECK(cache.find("token-a")->who.subject == "a");
  CHECK_FALSE(cache.find("token-"));
  CHECK_FALSE(cache.find("token-a "));
  // Past the bound the oldest goes; remembering again does not make a copy.
  cache.remember("token-b", auth_for("b2"));
  cache.remember("token-c", auth_for("c"));
  CHECK(cache.size() == 2);
  CHECK_FALSE(cache.find("token-a"));
  CHECK(cache.find("token-b")->who.subject == "b2");
  cache.forget("token-b");
  CHECK_FALSE(cache.find("token-b"));
  cache.remember("token-d", auth_for("d"));
  CHECK(cache.size() == 2);
  CHECK(cache.find("token-c"));
  cache.clear();
  CHECK(cache.size() == 0);
  // A token too long to keep is verified every time instead.
  cache.remember(std::string(broker::verified_tokens::max_token_bytes + 1, 't'), auth_for("long"));
  CHECK(cache.size() == 0);
}

TEST_CASE("a cached token is rechecked: revoked or its key removed, it is refused with the reason",
          "[auth][verified_tokens]") {
  testing::temp_dir dir;
  std::unique_ptr<persistence::store> store;
  REQUIRE(persistence::store::open(dir.path().string(), persistence::durability::none, &store).ok());
  auto rsa = testing::generate_rsa();
  broker::tenant_spec t;
  t.id = "acme";
  t.keys = {{"r1", broker::key_alg::rs256, rsa.public_pem}};
  broker::auth_service auth({t}, *store);
  auto claims = [](const std::string& jti) {
    return json{{"tenant", "acme"},
                {"sub", "ann"},
                {"jti", jti},
                {"exp", now_s() + 3600},
                {"tidings", {{"read", {"docs"}}, {"write", {"docs"}}}}};
  };
  auto token = testing::mint(broker::key_alg::rs256, rsa.private_pem, claims("one"), "r1");

  auto first = auth.authenticate(bearer(token));
  REQUIRE(first.auth);
  auto again = auth.authenticate(bearer(token));
  // The same admission: the signature was not checked again.
  CHECK(again.auth == first.auth);
  auto other =
      auth.authenticate(bearer(testing::mint(broker::key_alg::rs256, rsa.private_pem, claims("two"), "r1")));
  REQUIRE(other.auth);
  CHECK(other.auth != first.auth);

  SECTION("revoked") {
    REQUIRE(auth.revoke("acme", persistence::revocation_kind::jti, "one").ok());
    auto refused = auth.authenticate(bearer(token));
    CHECK_FALSE(refused.auth);
    CHECK(refused.status == 401);
    CHECK(refused.problem == core::token_problem::revoked);
    CHECK(
        auth.authenticate(bearer(testing::mint(broker::key_alg::rs256, rsa.private_pem, claims("two"), "r1")))
            .auth);
  }
  SECTION("its key's material changed by a reload, the kid kept") {
    auto other_key = testing::generate_rsa();
    t.keys = {{"r1", broker::key_alg::rs256, other_key.public_pem}};
    REQUIRE_FALSE(auth.reload({t}));
    auto refused = auth.authenticate(bearer(token));
    CHECK_FALSE(refused.auth);
    CHECK(refused.problem == core::token_problem::signature);
  }
  SECTION("its key removed by a reload") {
    auto other_key = testing::generate_rsa();
    t.keys = {{"r2", broker::key_alg::rs256, other_key.public_pem}};
    REQUIRE_FALSE(auth.reload({t}));
    auto refused = auth.authenticate(bearer(token));
    CHECK_FALSE(refused.auth);
    CHECK(refused.problem == core::token_problem::unknown_key);
  }
  SECTION("a forged token that differs in one byte finds nothing and fails its signature") {
    // Inside the signature (the last character may hold only padding bits).
    auto forged = token;
    auto& c = forged[forged.size() - 10];
    c = c == 'A' ? 'B' : 'A';
    auto refused = auth.authenticate(bearer(forged));
    CHECK_FALSE(refused.auth);
    CHECK(refused.problem == core::token_problem::signature);
  }
}
