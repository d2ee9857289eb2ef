#pragma once

// GET /metrics from a real node, parsed by the Prometheus project's own
// parser (tests/support/parse_metrics.py, python3-prometheus-client), so a
// test both checks the format and reads values.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/http_client.hpp"

namespace tidings::testing {

struct metric_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct scraped_metrics {
  std::map<std::string, std::string> families;  // family name -> type (counter, gauge, histogram)
  std::vector<metric_sample> samples;

  // The sample with exactly this name whose labels include `labels`; nullopt when none.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
  // The same, 0 when there is none (a labelled counter appears at its first count).
  double value_or_zero(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
};

// Scrapes and parses; throws std::runtime_error (with the parser's message)
// when the answer is not 200 or does not parse. `token`: a bearer token or "".
scraped_metrics scrape_metrics(const client::endpoint& ep, const std::string& token = "");

// Scrapes until `done` holds (or `timeout` passes: returns the last scrape).
// For values that move a moment after the request that caused them (a
// session's close, an upstream's fire).
scraped_metrics await_metrics(const client::endpoint& ep,
                              const std::function<bool(const scraped_metrics&)>& done,
                              std::chrono::milliseconds timeout, const std::string& token = "");

}  // namespace tidings::testing
