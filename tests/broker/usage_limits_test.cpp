#include "broker/usage_limits.hpp"

#include <catch2/catch.hpp>

using namespace tidings::broker;

TEST_CASE("session slots count per tenant and per subject and come back when released") {
  auto limits = std::make_shared<usage_limits>();
  tenant_limits l;
  l.sse_sessions = 3;
  l.sse_sessions_per_subject = 2;
  std::string why;
  auto a1 = limits->acquire_session("acme", "ann", l, &why);
  auto a2 = limits->acquire_session("acme", "ann", l, &why);
  REQUIRE(a1);
  REQUIRE(a2);
  CHECK_FALSE(limits->acquire_session("acme", "ann", l, &why));
  CHECK(why == "too many SSE sessions for this subject (limit 2)");
  auto b1 = limits->acquire_session("acme", "bob", l, &why);
  REQUIRE(b1);
  CHECK_FALSE(limits->acquire_session("acme", "bob", l, &why));
  CHECK(why == "too many SSE sessions for this tenant (limit 3)");
  CHECK(limits->acquire_session("globex", "ann", l, &why));
  CHECK(limits->sessions("acme") == 3);
  a1.reset();
  CHECK(limits->sessions("acme") == 2);
  CHECK(limits->acquire_session("acme", "ann", l, &why));
}

TEST_CASE("a slot that outlives the limits object is released harmlessly") {
  auto limits = std::make_shared<usage_limits>();
  std::string why;
  auto slot = limits->acquire_session("acme", "ann", tenant_limits{}, &why);
  REQUIRE(slot);
  limits.reset();
  slot.reset();
}

TEST_CASE("publishes are admitted by a token bucket per tenant") {
  usage_limits limits;
  tenant_limits l;
  l.publish_rate = 10;
  l.publish_burst = 10;
  std::chrono::milliseconds wait{0};
  CHECK(limits.admit_publish("acme", 10, l, &wait));
  CHECK_FALSE(limits.admit_publish("acme", 1, l, &wait));
  CHECK(wait.count() > 0);
  CHECK(wait.count() <= 101);
  CHECK(limits.admit_publish("globex", 10, l, &wait));
  CHECK_FALSE(limits.admit_publish("globex", 11, l, &wait));
}
