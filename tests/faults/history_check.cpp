#include "tests/faults/history_check.hpp"

#include <set>
#include <sstream>

#include "core/cursor.hpp"

namespace tidings::testing {

namespace {

constexpr std::size_t max_details = 12;

void note(history_report& r, const std::string& what) {
  if (r.details.size() < max_details) r.details.push_back(what);
}

// One session's own order: the controls it was told, each cursor after the
// last in the same epoch, none twice. Returns the cursors it read.
std::set<std::string> check_session(history_report& r, const read_back& rb) {
  r.resyncs += rb.controls.size();
  for (const auto& c : rb.controls) note(r, rb.who + " was told: " + c);
  std::set<std::string> seen;
  std::optional<core::cursor> previous;
  for (const auto& e : rb.events) {
    auto c = core::parse_cursor(e.cursor);
    if (c && previous && (c->epoch != previous->epoch || c->seq != previous->seq + 1)) {
      ++r.out_of_order;
      note(r, rb.who + ": " + core::format_cursor(*previous) + " then " + e.cursor);
    }
    if (c) previous = c;
    if (!seen.insert(e.cursor).second) {
      ++r.duplicated;
      note(r, rb.who + ": twice " + e.cursor);
    }
  }
  return seen;
}

}  // namespace

std::string history_report::summary() const {
  std::ostringstream out;
  out << acknowledged << " acknowledged, " << lost << " lost, " << reassigned << " reassigned, " << duplicated
      << " duplicated, " << out_of_order << " out of order, " << unacknowledged << " unacknowledged, "
      << resyncs << " resyncs";
  for (const auto& d : details) out << "\n  " << d;
  return out.str();
}

history_report check_history(const std::vector<std::pair<int, std::string>>& acked,
                             const std::vector<read_back>& reads) {
  history_report r;
  std::map<std::string, int> by_cursor;
  std::map<int, std::string> cursor_of_event;
  for (const auto& [i, cursor] : acked) {
    if (auto it = cursor_of_event.find(i); it != cursor_of_event.end()) {
      if (it->second != cursor) {
        ++r.reassigned;
        note(r, "event " + std::to_string(i) + " acknowledged at " + it->second + " and at " + cursor);
      }
      continue;
    }
    cursor_of_event[i] = cursor;
    auto [it, fresh] = by_cursor.emplace(cursor, i);
    if (!fresh && it->second != i) {
      ++r.reassigned;
      note(r, "cursor " + cursor + " acknowledged for events " + std::to_string(it->second) + " and " +
                  std::to_string(i));
    }
  }
  r.acknowledged = cursor_of_event.size();

  for (const auto& rb : reads) {
    const auto seen = check_session(r, rb);
    for (const auto& e : rb.events) {
      auto it = by_cursor.find(e.cursor);
      const int got = e.data.value("i", -1);
      if (it == by_cursor.end()) {
        ++r.unacknowledged;
        note(r, rb.who + ": never acknowledged " + e.cursor + " i=" + std::to_string(got));
      } else if (got != it->second) {
        ++r.reassigned;
        note(r, rb.who + ": at " + e.cursor + " i=" + std::to_string(got) +
                    ", acknowledged i=" + std::to_string(it->second));
      }
    }
    for (const auto& [cursor, i] : by_cursor)
      if (!seen.contains(cursor)) {
        ++r.lost;
        note(r, rb.who + ": never read i=" + std::to_string(i) + " at " + cursor);
      }
  }
  return r;
}

history_report check_notices(const std::vector<read_back>& reads) {
  history_report r;
  std::map<std::string, std::string> payload_at;  // cursor -> the first payload read there
  std::vector<std::set<std::string>> seen_by;
  for (const auto& rb : reads) {
    seen_by.push_back(check_session(r, rb));
    for (const auto& e : rb.events) {
      auto payload = e.data.dump();
      auto [it, fresh] = payload_at.emplace(e.cursor, payload);
      if (!fresh && it->second != payload) {
        ++r.reassigned;
        note(r, rb.who + ": at " + e.cursor + " " + payload + ", elsewhere " + it->second);
      }
    }
  }
  r.acknowledged = payload_at.size();
  for (std::size_t k = 0; k < reads.size(); ++k)
    for (const auto& [cursor, payload] : payload_at)
      if (!seen_by[k].contains(cursor)) {
        ++r.lost;
        note(r, reads[k].who + ": never read the notice at " + cursor);
      }
  return r;
}

}  // namespace tidings::testing
