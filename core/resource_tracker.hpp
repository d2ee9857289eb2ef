#pragma once

// What one source remembers of its resource between reads (issue 4): the
// last state (state reads) or the last seq delivered (event-log reads). Each
// read becomes the change events since the previous one (read_extraction).
// The first read of a source with nothing remembered is its baseline and
// yields no events; a restored snapshot makes the first read a diff against
// the state before the restart. An event log restored from a snapshot goes
// on from its last seq only when the first read continues it (has a newer
// seq); a log that starts over after the restart (a connector's own ring
// begins again at 1) is a fresh baseline, not a GAP. Pure: no I/O, no clock.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/read_extraction.hpp"

namespace tidings::core {

class resource_tracker {
 public:
  enum class shape { none, state, event_log };

  struct outcome {
    std::vector<extracted_event> events;
    std::string error;  // a malformed event-log read: nothing changed
  };

  // What a snapshot stored (shape "state" with its JSON, or "event-log"
  // with the last seq). An unknown shape or unparsable JSON restores
  // nothing: the next read is a baseline.
  void restore(std::string_view shape_name, const std::string& state_json,
               std::optional<std::uint64_t> last_seq);

  // One read: its text, and whether its mime type was the event-log one.
  outcome apply(bool event_log, std::string_view text);

  shape current_shape() const { return shape_; }
  std::string_view shape_name() const;  // "state", "event-log" or ""
  const nlohmann::json& state() const { return state_; }
  std::optional<std::uint64_t> last_seq() const { return last_seq_; }

 private:
  shape shape_ = shape::none;
  nlohmann::json state_;
  std::optional<std::uint64_t> last_seq_;
  bool restored_ = false;  // the next read is the first after restore()
};

}  // namespace tidings::core
