#include "apps/tidings_load/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tidings::load {

// Values below 128 ns have a bucket each; above, each power of two [2^k,
// 2^(k+1)) is split into 64 equal buckets, indexed by the top 7 bits.
std::size_t latency_histogram::index_of(std::uint64_t ns) {
  if (ns < 128) return static_cast<std::size_t>(ns);
  const auto shift = static_cast<std::size_t>(std::bit_width(ns)) - 7;  // ns >> shift is in [64, 128)
  return (shift + 1) * 64 + static_cast<std::size_t>((ns >> shift) - 64);
}

std::uint64_t latency_histogram::lower_bound_of(std::size_t index) {
  if (index < 128) return index;
  const auto shift = index / 64 - 1;
  return (index % 64 + 64) << shift;
}

void latency_histogram::record(std::int64_t ns) {
  const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0));
  ++counts_[std::min(index_of(v), bucket_count - 1)];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
}

void latency_histogram::merge(const latency_histogram& other) {
  for (std::size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

double latency_histogram::percentile_ms(double q) const {
  if (count_ == 0) return 0;
  const auto rank =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      // Never above the largest sample actually seen.
      const auto v = std::min<std::uint64_t>(lower_bound_of(i), static_cast<std::uint64_t>(max_ns_));
      return static_cast<double>(v) / 1e6;
    }
  }
  return static_cast<double>(max_ns_) / 1e6;
}

latency_summary latency_histogram::summary() const {
  return {count_,
          percentile_ms(0.50),
          percentile_ms(0.90),
          percentile_ms(0.99),
          percentile_ms(0.999),
          static_cast<double>(max_ns_) / 1e6};
}

std::vector<std::pair<double, std::uint64_t>> latency_histogram::buckets_ms() const {
  std::vector<std::pair<double, std::uint64_t>> out;
  for (std::size_t i = 0; i < bucket_count; ++i)
    if (counts_[i]) out.emplace_back(static_cast<double>(lower_bound_of(i)) / 1e6, counts_[i]);
  return out;
}

}  // namespace tidings::load
