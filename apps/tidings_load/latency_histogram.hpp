#pragma once

// Publish-to-receive and ack latencies, HDR-style: a log-linear histogram
// with 64 buckets per power of two (under 1.6 % error at any size), so every
// delivery of a run is counted in 32 KiB, with no sampling and no sort.

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace tidings::load {

struct latency_summary {
  std::uint64_t count = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double p999_ms = 0;
  double max_ms = 0;  // exact
};

class latency_histogram {
 public:
  void record(std::int64_t ns);
  void merge(const latency_histogram& other);

  std::uint64_t count() const { return count_; }
  // The smallest bucket value at or above which fewer than (1 - q) of the
  // samples lie: nearest rank, within a bucket's width. 0 when empty.
  double percentile_ms(double q) const;
  latency_summary summary() const;
  // Non-empty buckets as (lower bound in ms, count), ascending: for plots.
  std::vector<std::pair<double, std::uint64_t>> buckets_ms() const;

  // Exposed for the unit of the mapping.
  static std::size_t index_of(std::uint64_t ns);
  static std::uint64_t lower_bound_of(std::size_t index);

 private:
  static constexpr std::size_t bucket_count = 64 * 64;  // values up to 2^63 ns
  std::array<std::uint64_t, bucket_count> counts_{};
  std::uint64_t count_ = 0;
  std::int64_t max_ns_ = 0;
};

}  // namespace tidings::load
