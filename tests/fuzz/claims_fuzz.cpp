// core/claims.hpp: the payload of a bearer token, mapped to a principal after
// its signature checked out (but a signed token can still carry anything its
// issuer put there). Input: the payload JSON, mapped at a fixed "now".
// Invariants: a result is either a principal or a problem with a reason; an
// accepted principal is valid until just before `exp` and expired at it.

#include <string>

#include "core/claims.hpp"
#include "fuzz_check.hpp"

using namespace tidings;

namespace {

constexpr std::int64_t now = 1'700'000'000;

void check_result(const core::claims_result& r, std::int64_t at) {
  if (!r.value) {
    FUZZ_CHECK(r.problem != core::token_problem::none);
    FUZZ_CHECK(!r.error.empty());
    FUZZ_CHECK(core::token_problem_name(r.problem) != "unknown");
    return;
  }
  FUZZ_CHECK(r.problem == core::token_problem::none);
  const core::principal& p = *r.value;
  FUZZ_CHECK(!p.tenant.empty() && !p.subject.empty());
  FUZZ_CHECK(p.expires_at > at);
  FUZZ_CHECK(!p.not_before || *p.not_before <= at);
  FUZZ_CHECK(p.attributes.is_object());
  for (const core::grant_set* set : {&p.read, &p.write}) {
    FUZZ_CHECK(set->all().size() <= 256);
    for (const core::grant& g : set->all()) FUZZ_CHECK(!g.stream.empty());
  }
  for (const auto& scope : p.scopes) FUZZ_CHECK(!scope.empty() && scope.find(' ') == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view payload = fuzz::as_text(data, size);

  core::claims_result r = core::map_claims(payload, now);
  check_result(r, now);
  if (!r.value) return 0;

  // Valid through the second before `exp`, expired from `exp` on.
  std::int64_t exp = r.value->expires_at;
  core::claims_result last = core::map_claims(payload, exp - 1);
  check_result(last, exp - 1);
  FUZZ_CHECK(last.value.has_value());
  core::claims_result expired = core::map_claims(payload, exp);
  FUZZ_CHECK(!expired.value && expired.problem == core::token_problem::expired);
  return 0;
}
