// The wait before a source's next subscribe attempt (core/retry_schedule):
// the steps in order, then the last one, shortened by up to a fifth.

#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include "core/retry_schedule.hpp"

using namespace std::chrono_literals;
using tidings::core::next_retry_wait;

TEST_CASE("a source waits the configured steps in order and no jitter touches them", "[retry_schedule]") {
  const std::vector<std::chrono::milliseconds> steps{100ms, 200ms, 400ms};
  for (double unit : {0.0, 0.5, 0.999}) {
    CHECK(next_retry_wait(steps, 0, unit).wait == 100ms);
    CHECK(next_retry_wait(steps, 1, unit).wait == 200ms);
    CHECK(next_retry_wait(steps, 2, unit).wait == 400ms);
    CHECK_FALSE(next_retry_wait(steps, 2, unit).past_steps);
  }
}

TEST_CASE("past the steps a source retries for ever at the last step, less up to a fifth at random",
          "[retry_schedule]") {
  const std::vector<std::chrono::milliseconds> steps{1000ms, 16000ms};
  for (std::size_t failures : {2u, 3u, 1000u}) {
    auto longest = next_retry_wait(steps, failures, 0.0);
    CHECK(longest.past_steps);
    CHECK(longest.wait == 16000ms);
    CHECK(next_retry_wait(steps, failures, 0.5).wait == 14400ms);
    // Just under one: close to the shortest wait, 4/5 of the cap.
    auto shortest = next_retry_wait(steps, failures, 0.99999).wait;
    CHECK(shortest >= 12800ms);
    CHECK(shortest < 12802ms);
  }
  // Out-of-range numbers are clamped, never a negative or longer wait.
  CHECK(next_retry_wait(steps, 5, -1.0).wait == 16000ms);
  CHECK(next_retry_wait(steps, 5, 7.0).wait == 12800ms);
}

TEST_CASE("a retry past the steps never waits zero, however short the cap", "[retry_schedule]") {
  const std::vector<std::chrono::milliseconds> steps{0ms};
  CHECK(next_retry_wait(steps, 1, 0.0).wait == 1ms);
  CHECK(next_retry_wait(steps, 1, 0.99).wait == 1ms);
  CHECK(next_retry_wait(steps, 1, 0.99).past_steps);
}
