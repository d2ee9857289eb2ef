#include "core/stream_read.hpp"

namespace tidings::core {

namespace {

// Object keys of different paths must not dedupe against each other.
constexpr char key_separator = '\x1f';

nlohmann::json state_value(const nlohmann::json& data) {
  return state_of_read(data).value_or(nullptr);
}

}  // namespace

std::optional<nlohmann::json> state_of_read(const nlohmann::json& data) {
  if (auto it = data.find("state"); it != data.end()) return *it;
  if (auto it = data.find("text"); it != data.end() && it->is_string())
    return parse_state_text(it->get_ref<const std::string&>());
  return std::nullopt;
}

std::string_view read_kind_name(read_kind k) {
  switch (k) {
    case read_kind::state:
      return "state";
    case read_kind::event_log:
      return "event-log";
    case read_kind::plain:
      break;
  }
  return "events";
}

std::optional<read_kind> parse_read_kind(std::string_view name) {
  for (auto k : {read_kind::plain, read_kind::state, read_kind::event_log})
    if (read_kind_name(k) == name) return k;
  return std::nullopt;
}

read_kind classify_read(const nlohmann::json& data) {
  if (!data.is_object()) return read_kind::plain;
  auto shape = data.find("shape");
  if (shape != data.end() && *shape == "state") return read_kind::state;
  auto mime = data.find("mimeType");
  bool log_marked = (shape != data.end() && *shape == "event-log") ||
                    (mime != data.end() && mime->is_string() && *mime == event_log_mime_type);
  // A bare event-log body, {"events":[...]}, needs no marking.
  auto events = data.find("events");
  bool bare_log = data.size() == 1 && events != data.end() && events->is_array();
  if (log_marked || bare_log) return read_kind::event_log;
  return read_kind::plain;
}

read_kind record_baseline(path_reads& reads, const std::string& path, const nlohmann::json& data) {
  auto kind = classify_read(data);
  if (kind == read_kind::plain) return kind;
  auto& read = reads[path];
  read.kind = kind;
  if (kind == read_kind::state) {
    read.state = state_value(data);
    read.last_seq.reset();
    return kind;
  }
  read.state = nullptr;
  event_log_read log;
  if (!extract_event_log(data, std::nullopt, &log)) read.last_seq = log.last_seen;
  return kind;
}

stream_read apply_stream_event(path_reads& reads, const std::string& path, const std::string& type,
                               const nlohmann::json& data) {
  stream_read out;
  out.kind = classify_read(data);
  if (out.kind == read_kind::plain) {
    extracted_event ev;
    ev.fields = {{"type", type}, {"key", path}, {"object", data}};
    // No object identity: a repeated MODIFIED of one path is news each time
    // (the default line carries no data), so only ×N collapsing applies.
    out.events.push_back(std::move(ev));
    return out;
  }
  auto& read = reads[path];
  if (read.kind != out.kind) {
    // A path that changes shape starts over: no diff across shapes.
    read = path_read{out.kind, nullptr, std::nullopt};
  }
  if (out.kind == read_kind::state) {
    auto next = state_value(data);
    out.events = diff_states(read.state, next);
    read.state = std::move(next);
  } else {
    event_log_read log;
    if (auto error = extract_event_log(data, read.last_seq, &log)) {
      out.error = *error;
      return out;
    }
    out.events = std::move(log.events);
    read.last_seq = log.last_seen;
  }
  for (auto& ev : out.events)
    if (!ev.object_key.empty()) ev.object_key = path + key_separator + ev.object_key;
  return out;
}

}  // namespace tidings::core
