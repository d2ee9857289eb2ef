// tidings-load's latency histogram: the bucket mapping is continuous and
// tight, and percentiles land within a bucket of the exact nearest rank.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "apps/tidings_load/latency_histogram.hpp"

using tidings::load::latency_histogram;

TEST_CASE("histogram buckets cover every value once, each within 1.6 percent", "[load]") {
  std::size_t last = 0;
  for (std::uint64_t v = 0; v < 200000; ++v) {
    const auto i = latency_histogram::index_of(v);
    CHECK((i == last || i == last + 1));  // no bucket skipped
    last = i;
    const auto low = latency_histogram::lower_bound_of(i);
    REQUIRE(low <= v);
    CHECK(static_cast<double>(v - low) <= 0.016 * static_cast<double>(std::max<std::uint64_t>(v, 1)));
  }
  // An hour in ns still has a bucket.
  CHECK(latency_histogram::index_of(3'600'000'000'000ULL) < std::size_t{64} * 64);
}

TEST_CASE("histogram percentiles match the exact nearest rank within a bucket", "[load]") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(2e6), 0.8);  // around 2 ms, long tail
  std::vector<std::int64_t> samples;
  latency_histogram h;
  for (int i = 0; i < 100000; ++i) {
    const auto ns = static_cast<std::int64_t>(dist(rng));
    samples.push_back(ns);
    h.record(ns);
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples.size()))) - 1;
    const double exact_ms = static_cast<double>(samples[k]) / 1e6;
    INFO("q " << q);
    CHECK(h.percentile_ms(q) <= exact_ms);
    CHECK(h.percentile_ms(q) >= exact_ms * (1 - 0.016));
  }
  const auto s = h.summary();
  CHECK(s.count == samples.size());
  CHECK(s.max_ms == static_cast<double>(samples.back()) / 1e6);

  SECTION("merging two halves gives the same figures") {
    latency_histogram a, b;
    for (std::size_t i = 0; i < samples.size(); ++i) (i % 2 ? a : b).record(samples[i]);
    a.merge(b);
    CHECK(a.summary().p99_ms == s.p99_ms);
    CHECK(a.count() == s.count);
  }
  SECTION("an empty histogram says zero") {
    CHECK(latency_histogram{}.summary().p50_ms == 0);
  }
}
