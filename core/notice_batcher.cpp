#include "core/notice_batcher.hpp"

#include <algorithm>
#include <functional>

namespace tidings::core {

namespace {

constexpr std::string_view times = " \xc3\x97";  // " ×"

// Saturates instead of overflowing: a policy may hold absurd durations.
notice_batcher::time_point later(notice_batcher::time_point t, std::chrono::milliseconds d) {
  using duration = notice_batcher::clock::duration;
  constexpr std::chrono::milliseconds century = std::chrono::hours(24 * 365 * 100);
  if (d < std::chrono::milliseconds::zero()) d = std::chrono::milliseconds::zero();
  if (d > century) d = century;
  auto step = std::chrono::duration_cast<duration>(d);
  if (t > notice_batcher::time_point::max() - step) return notice_batcher::time_point::max();
  return t + step;
}

}  // namespace

notice_batcher::notice_batcher(debounce_policy policy) : policy_(policy) {}

bool notice_batcher::add(std::string_view object_key, std::string line, time_point now) {
  if (!object_key.empty() && policy_.max_tracked_objects > 0) {
    std::string key(object_key);
    auto it = last_line_.find(key);
    if (it != last_line_.end()) {
      if (it->second.first == line) return false;
      it->second.first = line;
      recency_.splice(recency_.begin(), recency_, it->second.second);
    } else {
      recency_.push_front(key);
      last_line_.emplace(std::move(key), std::make_pair(line, recency_.begin()));
      if (last_line_.size() > policy_.max_tracked_objects) {
        last_line_.erase(recency_.back());
        recency_.pop_back();
      }
    }
  }

  if (!pending()) burst_start_ = now;  // the first line since the last flush opens a burst
  deadline_ = std::min(later(now, policy_.quiet), later(burst_start_, policy_.max_wait));

  if (auto it = line_index_.find(line); it != line_index_.end()) {
    ++lines_[it->second].second;
  } else if (lines_.size() < policy_.max_lines) {
    line_index_.emplace(line, lines_.size());
    lines_.emplace_back(std::move(line), 1);
  } else {
    omitted_.insert(std::hash<std::string>{}(line));
  }
  return true;
}

std::optional<notice_batcher::time_point> notice_batcher::deadline() const {
  if (!pending()) return std::nullopt;
  return deadline_;
}

std::optional<std::vector<std::string>> notice_batcher::take_due(time_point now) {
  if (!pending() || now < deadline_) return std::nullopt;
  return collapse();
}

std::vector<std::string> notice_batcher::take_all() {
  return collapse();
}

std::vector<std::string> notice_batcher::collapse() {
  std::vector<std::string> notice;
  notice.reserve(lines_.size() + 1);
  for (auto& [line, count] : lines_) {
    if (count > 1) {
      line += times;
      line += std::to_string(count);
    }
    notice.push_back(std::move(line));
  }
  if (!omitted_.empty()) {
    // Appended piecewise: GCC 12 at -O3 misreads "+" + to_string(n) as an
    // overlapping memcpy (-Wrestrict).
    std::string more = "+";
    more += std::to_string(omitted_.size());
    more += " more";
    notice.push_back(std::move(more));
  }
  lines_.clear();
  line_index_.clear();
  omitted_.clear();
  return notice;
}

}  // namespace tidings::core
