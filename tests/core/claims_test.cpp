#include "core/claims.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;
using json = nlohmann::json;

namespace {

constexpr std::int64_t now = 1'800'000'000;

json good() {
  return {{"tenant", "acme"},
          {"sub", "ann"},
          {"exp", now + 60},
          {"jti", "t-1"},
          {"tidings", {{"read", {"docs:/a/**", "watch:*"}}, {"write", {"docs"}}, {"admin", true}}},
          {"groups", {"finance"}},
          {"scope", "read:docs  write:docs"},
          {"attributes", {{"region", "eu"}}}};
}

}  // namespace

TEST_CASE("claims map to a principal") {
  auto r = map_claims(good().dump(), now);
  REQUIRE(r.value);
  const auto& p = *r.value;
  CHECK(p.tenant == "acme");
  CHECK(p.subject == "ann");
  CHECK(p.jti == "t-1");
  CHECK(p.admin);
  CHECK(p.read.covers("docs", "/a/x"));
  CHECK_FALSE(p.read.covers("docs", "/b/x"));
  CHECK(p.write.covers("docs", "/b/x"));
  CHECK(p.groups == std::vector<std::string>{"finance"});
  CHECK(p.scopes == std::vector<std::string>{"read:docs", "write:docs"});
  CHECK(p.attributes["region"] == "eu");
}

TEST_CASE("a token without tidings grants nothing") {
  auto j = good();
  j.erase("tidings");
  auto r = map_claims(j.dump(), now);
  REQUIRE(r.value);
  CHECK(r.value->read.empty());
  CHECK_FALSE(r.value->admin);
}

TEST_CASE("each missing or bad claim is named") {
  for (const char* name : {"tenant", "sub", "exp"}) {
    auto j = good();
    j.erase(name);
    auto r = map_claims(j.dump(), now);
    CHECK_FALSE(r.value);
    CHECK(r.problem == token_problem::claims);
    CHECK(r.error.find(name) != std::string::npos);
  }
  auto j = good();
  j["tidings"]["read"] = {"docs:nope"};
  auto r = map_claims(j.dump(), now);
  CHECK(r.problem == token_problem::claims);
  CHECK(r.error.find("bad grant 'docs:nope'") != std::string::npos);
  j = good();
  j["exp"] = "soon";
  CHECK(map_claims(j.dump(), now).problem == token_problem::claims);
  CHECK(map_claims("[1]", now).problem == token_problem::malformed);
  CHECK(map_claims("{", now).problem == token_problem::malformed);
}

TEST_CASE("list claims refuse empty entries and scopes with spaces") {
  // Found by claims_fuzz: ["", "%b"] used to pass as an empty scope.
  for (auto [name, value] :
       {std::pair{"scopes", json::array({"", "read"})}, std::pair{"scopes", json::array({"read docs"})},
        std::pair{"scopes", json::array({"read\tdocs"})}, std::pair{"scope", json("read\ndocs write")},
        std::pair{"roles", json::array({""})}, std::pair{"groups", json::array({1})}}) {
    auto j = good();
    j[name] = value;
    auto r = map_claims(j.dump(), now);
    CHECK_FALSE(r.value);
    CHECK(r.problem == token_problem::claims);
    CHECK(r.error.find(name) != std::string::npos);
  }
  auto j = good();
  j["roles"] = {"Library Admin"};
  auto r = map_claims(j.dump(), now);
  REQUIRE(r.value);
  CHECK(r.value->roles == std::vector<std::string>{"Library Admin"});
}

TEST_CASE("expiry and not-before are checked against the given time") {
  auto j = good();
  j["exp"] = now;
  CHECK(map_claims(j.dump(), now).problem == token_problem::expired);
  j["exp"] = now + 1;
  CHECK(map_claims(j.dump(), now).value);
  j["nbf"] = now + 5;
  CHECK(map_claims(j.dump(), now).problem == token_problem::not_yet_valid);
  CHECK(map_claims(j.dump(), now + 5).problem == token_problem::expired);
  auto later = good();
  later["iat"] = now + 61;
  CHECK(map_claims(later.dump(), now).problem == token_problem::not_yet_valid);
  later["iat"] = now + 60;
  CHECK(map_claims(later.dump(), now).value);
}
