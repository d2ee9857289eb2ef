#include "core/token_bucket.hpp"

#include <catch2/catch.hpp>

using tidings::core::token_bucket;
using namespace std::chrono_literals;

TEST_CASE("a token bucket admits its burst, then its rate") {
  token_bucket::time_point t0{};
  token_bucket b(10, 20, t0);
  CHECK(b.take(20, t0));
  CHECK_FALSE(b.take(1, t0));
  CHECK(b.wait_for(1, t0) == 101ms);
  CHECK_FALSE(b.take(2, t0 + 100ms));
  CHECK(b.take(1, t0 + 100ms));
  CHECK(b.take(10, t0 + 1200ms));
  CHECK_FALSE(b.take(21, t0 + 1h));
  CHECK(b.take(20, t0 + 1h));
}

TEST_CASE("a reconfigured bucket keeps no more than its new burst") {
  token_bucket::time_point t0{};
  token_bucket b(10, 100, t0);
  b.reconfigure(1, 5);
  CHECK_FALSE(b.take(6, t0));
  CHECK(b.take(5, t0));
}
