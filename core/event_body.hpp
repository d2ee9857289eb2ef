#pragma once

// The body of a publish (POST /v1/streams/{stream}/events): one event object,
// or an array of 1 to max_publish_events of them. Pure parsing of untrusted
// text, so the broker, the tests and the fuzzer share one implementation.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/event.hpp"

namespace tidings::core {

// Serializing JSON recurses once per level; a 100 000-deep document would
// overflow the stack. Real documents stay far below this.
inline constexpr std::size_t max_json_nesting = 128;
inline constexpr std::size_t max_publish_events = 1000;

// True when no array or object in `text` nests deeper than `max_depth`. A
// plain scan (strings skipped), so it runs before any recursive parser sees
// the text. Exact for valid JSON; on invalid text it only has to terminate.
bool json_nesting_within(std::string_view text, std::size_t max_depth);

struct event_body {
  std::vector<event> events;  // in the order published; time_ms not set
  bool single = true;         // the body was one object, not an array
};

// Parses a publish body into `out`. On failure returns the reason, worded for
// the publisher (the broker sends it as a 400), and leaves `out` untouched:
// - "JSON nests deeper than 128 levels"
// - "malformed JSON: <parser message>" (a NUL byte anywhere is malformed)
// - one object: "an event must be a JSON object", "\"path\" ...", "unknown
//   field ..."
// - an array: "an empty array publishes nothing", "at most 1000 events per
//   publish", "event N: <reason for that element>"
// Each event's data_json is compact, valid UTF-8 JSON.
std::optional<std::string> parse_event_body(std::string_view text, event_body& out);

}  // namespace tidings::core
