#pragma once

// Dedupe and trailing debounce of notice lines (ADR 0005, "Dedupe" and
// "Debounce"). Pure: the caller passes the time, so tests use a fake clock.

#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tidings::core {

struct debounce_policy {
  std::chrono::milliseconds quiet{3000};      // flush this long after the last line
  std::chrono::milliseconds max_wait{15000};  // but no later than this after the first
  std::size_t max_lines = 20;                 // per notice, then "+N more"
  std::size_t max_tracked_objects = 10000;    // dedupe memory (oldest forgotten first)
};

class notice_batcher {
 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  explicit notice_batcher(debounce_policy policy = {});

  // Queues a line. A line equal to the last line queued for the same
  // non-empty object key is dropped (returns false). Each accepted line moves
  // the deadline to now + quiet, capped at the burst's first line + max_wait.
  bool add(std::string_view object_key, std::string line, time_point now);

  bool pending() const { return !lines_.empty() || !omitted_.empty(); }
  // When the pending lines are due; nullopt when nothing is pending.
  std::optional<time_point> deadline() const;

  // The notice when due at `now`: identical lines collapsed to `line ×N`
  // (first-seen order), at most max_lines of them, then `+N more` for the
  // rest. Clears the pending lines. nullopt when not due or empty.
  std::optional<std::vector<std::string>> take_due(time_point now);
  // The same, whether due or not (a watch being stopped flushes).
  std::vector<std::string> take_all();

 private:
  std::vector<std::string> collapse();

  debounce_policy policy_;
  // The first max_lines distinct lines of the burst with their counts, in
  // first-seen order; later distinct lines are only counted, by hash, since
  // they are never shown (a hash collision undercounts "+N more" by one).
  std::vector<std::pair<std::string, std::size_t>> lines_;
  std::unordered_map<std::string, std::size_t> line_index_;
  std::unordered_set<std::size_t> omitted_;
  time_point burst_start_{};
  time_point deadline_{};
  // Last line per object key, most recently updated first, for the memory cap.
  std::list<std::string> recency_;
  std::unordered_map<std::string, std::pair<std::string, std::list<std::string>::iterator>> last_line_;
};

}  // namespace tidings::core
