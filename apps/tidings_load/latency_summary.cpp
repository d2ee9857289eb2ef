#include "apps/tidings_load/latency_summary.hpp"

#include <algorithm>
#include <cmath>

namespace tidings::load {

namespace {

double rank_ms(std::vector<std::int64_t>& v, double q) {
  auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  k = std::clamp<std::size_t>(k, 1, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1e6;
}

}  // namespace

latency_summary summarize(std::vector<std::int64_t>& samples_ns) {
  latency_summary out;
  out.count = samples_ns.size();
  if (samples_ns.empty()) return out;
  out.p50_ms = rank_ms(samples_ns, 0.50);
  out.p99_ms = rank_ms(samples_ns, 0.99);
  out.max_ms = static_cast<double>(*std::max_element(samples_ns.begin(), samples_ns.end())) / 1e6;
  return out;
}

}  // namespace tidings::load
