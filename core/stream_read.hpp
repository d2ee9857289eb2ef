#pragma once

// A watch on a Tidings stream (stream://NAME/prefix) reads each published
// event as a read of the resource at the event's path: data of the form
// {"shape":"state","state":V} (or {"shape":"state","text":"..."}) is a state
// read, diffed against that path's previous one; {"events":[...]} alone, or
// with "shape":"event-log" or the event-log "mimeType" beside it, is an
// event-log read; anything else passes through as one event. Pure.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/read_extraction.hpp"

namespace tidings::core {

enum class read_kind { plain, state, event_log };
std::string_view read_kind_name(read_kind k);  // "events", "state", "event-log"
std::optional<read_kind> parse_read_kind(std::string_view name);

// What a path was last read as.
struct path_read {
  read_kind kind = read_kind::plain;
  nlohmann::json state;                   // state reads
  std::optional<std::uint64_t> last_seq;  // event-log reads
};
using path_reads = std::map<std::string, path_read, std::less<>>;

read_kind classify_read(const nlohmann::json& data);

// The state a state read carries: its "state", else its "text" parsed as
// parse_state_text does; nullopt when it has neither.
std::optional<nlohmann::json> state_of_read(const nlohmann::json& data);

struct stream_read {
  read_kind kind = read_kind::plain;
  std::vector<extracted_event> events;  // object keys are prefixed with the path
  std::string error;                    // a malformed event-log read; no events
};

// The events one published event stands for, updating `reads`.
stream_read apply_stream_event(path_reads& reads, const std::string& path, const std::string& type,
                               const nlohmann::json& data);

// Records a read as the baseline (no events): state and last seq only.
read_kind record_baseline(path_reads& reads, const std::string& path, const nlohmann::json& data);

}  // namespace tidings::core
