#pragma once

// A counter family whose one label takes a small, known set of values
// (a resync reason, a source strategy). The children for the known values
// are created up front, so the hot path finds its counter with a few string
// compares and no lock; a value outside the set (a bug, or a new reason not
// listed yet) still counts, through the family's locked Add.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tidings::actors {

class labelled_counter {
 public:
  labelled_counter(prometheus::Registry& registry, const std::string& name, const std::string& help,
                   std::string label, const std::vector<std::string_view>& values)
      : family_(prometheus::BuildCounter().Name(name).Help(help).Register(registry)),
        label_(std::move(label)) {
    for (auto v : values) known_.emplace_back(std::string(v), &family_.Add({{label_, std::string(v)}}));
  }

  void add(std::string_view value, double n = 1) {
    for (auto& [v, counter] : known_) {
      if (v == value) {
        counter->Increment(n);
        return;
      }
    }
    family_.Add({{label_, std::string(value)}}).Increment(n);
  }

 private:
  prometheus::Family<prometheus::Counter>& family_;
  std::string label_;
  std::vector<std::pair<std::string, prometheus::Counter*>> known_;
};

// The same for gauges (e.g. active watchers by strategy).
class labelled_gauge {
 public:
  labelled_gauge(prometheus::Registry& registry, const std::string& name, const std::string& help,
                 std::string label, const std::vector<std::string_view>& values)
      : family_(prometheus::BuildGauge().Name(name).Help(help).Register(registry)), label_(std::move(label)) {
    for (auto v : values) known_.emplace_back(std::string(v), &family_.Add({{label_, std::string(v)}}));
  }

  prometheus::Gauge& at(std::string_view value) {
    for (auto& [v, gauge] : known_)
      if (v == value) return *gauge;
    return family_.Add({{label_, std::string(value)}});
  }

 private:
  prometheus::Family<prometheus::Gauge>& family_;
  std::string label_;
  std::vector<std::pair<std::string, prometheus::Gauge*>> known_;
};

}  // namespace tidings::actors
