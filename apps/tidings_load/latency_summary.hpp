#pragma once

#include <cstdint>
#include <vector>

namespace tidings::load {

struct latency_summary {
  std::size_t count = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// Percentiles (nearest rank) of nanosecond samples; reorders `samples_ns`.
latency_summary summarize(std::vector<std::int64_t>& samples_ns);

}  // namespace tidings::load
