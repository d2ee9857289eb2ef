#pragma once

// tidings-load --report FILE: one self-contained HTML page (inline SVG and
// CSS, no script, nothing fetched) with a run's figures and plots, for a
// person to look at rather than read: the latency distribution, deliveries
// over time and the node's memory over time.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/tidings_load/latency_histogram.hpp"

namespace tidings::load {

// What a run recorded over time, in equal steps from its first publish.
struct run_series {
  double step_s = 0.1;
  std::vector<std::uint64_t> deliveries;  // deliveries received in each step
  std::vector<double> node_rss_mib;       // the node's RSS at the end of each step; empty when unknown
};

// `summary` is the run's JSON line (every figure it printed). Throws
// std::runtime_error naming the file when it cannot be written.
void write_html_report(const std::string& path, const nlohmann::json& summary,
                       const latency_histogram& latency, const run_series& series);

}  // namespace tidings::load
