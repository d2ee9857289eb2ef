#include "tests/support/metrics_scrape.hpp"

#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/build_paths.hpp"
#include "tests/support/command_run.hpp"

namespace tidings::testing {

namespace {

bool labels_include(const std::map<std::string, std::string>& have,
                    const std::map<std::string, std::string>& want) {
  for (const auto& [k, v] : want) {
    auto it = have.find(k);
    if (it == have.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

std::optional<double> scraped_metrics::value(const std::string& name,
                                             const std::map<std::string, std::string>& labels) const {
  for (const auto& s : samples)
    if (s.name == name && labels_include(s.labels, labels)) return s.value;
  return std::nullopt;
}

double scraped_metrics::value_or_zero(const std::string& name,
                                      const std::map<std::string, std::string>& labels) const {
  return value(name, labels).value_or(0);
}

scraped_metrics scrape_metrics(const client::endpoint& ep, const std::string& token) {
  client::header_list headers;
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  auto r = client::request(ep, "GET", "/metrics", {}, headers);
  if (r.status != 200) throw std::runtime_error("GET /metrics: " + std::to_string(r.status) + " " + r.body);
  if (r.headers["content-type"].rfind("text/plain; version=0.0.4", 0) != 0)
    throw std::runtime_error("GET /metrics: content type " + r.headers["content-type"]);
  auto parsed = run_command({"/usr/bin/python3", source_dir() + "/tests/support/parse_metrics.py"}, r.body);
  if (parsed.exit_code != 0) throw std::runtime_error("/metrics did not parse: " + describe(parsed));
  auto j = nlohmann::json::parse(parsed.out);
  scraped_metrics out;
  for (const auto& [name, type] : j["families"].items()) out.families[name] = type.get<std::string>();
  for (const auto& s : j["samples"]) {
    metric_sample m;
    m.name = s["name"].get<std::string>();
    for (const auto& [k, v] : s["labels"].items()) m.labels[k] = v.get<std::string>();
    m.value = s["value"].get<double>();
    out.samples.push_back(std::move(m));
  }
  return out;
}

scraped_metrics await_metrics(const client::endpoint& ep,
                              const std::function<bool(const scraped_metrics&)>& done,
                              std::chrono::milliseconds timeout, const std::string& token) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto m = scrape_metrics(ep, token);
    if (done(m) || std::chrono::steady_clock::now() >= deadline) return m;
    // A scrape costs the node little, but not nothing: pace the retries.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tidings::testing
