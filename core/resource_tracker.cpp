#include "core/resource_tracker.hpp"

#include <algorithm>

namespace tidings::core {

void resource_tracker::restore(std::string_view shape_name, const std::string& state_json,
                               std::optional<std::uint64_t> last_seq) {
  *this = resource_tracker();
  if (shape_name == "state") {
    auto parsed = nlohmann::json::parse(state_json, nullptr, false);
    if (parsed.is_discarded()) return;
    shape_ = shape::state;
    state_ = std::move(parsed);
  } else if (shape_name == "event-log") {
    shape_ = shape::event_log;
    last_seq_ = last_seq;
    restored_ = true;
  }
}

resource_tracker::outcome resource_tracker::apply(bool event_log, std::string_view text) {
  outcome out;
  if (!event_log) {
    auto next = parse_state_text(text);
    // A source that changes shape starts over: no diff across shapes.
    if (shape_ == shape::state) out.events = diff_states(state_, next);
    shape_ = shape::state;
    state_ = std::move(next);
    last_seq_.reset();
    return out;
  }
  auto body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded()) {
    out.error = "the event-log read is not JSON";
    return out;
  }
  event_log_read log;
  bool baseline = shape_ != shape::event_log;
  if (restored_ && !baseline) {
    restored_ = false;
    // Does the read continue the stored log? Only then are its newer events news.
    std::optional<std::uint64_t> newest;
    if (auto events = body.find("events"); events != body.end() && events->is_array())
      for (const auto& e : *events)
        if (auto seq = e.find("seq"); seq != e.end() && seq->is_number_unsigned())
          newest = std::max(newest.value_or(0), seq->get<std::uint64_t>());
    if (!newest || !last_seq_ || *newest <= *last_seq_) baseline = true;
  }
  if (auto error = extract_event_log(body, baseline ? std::nullopt : last_seq_, &log)) {
    out.error = *error;
    return out;
  }
  if (!baseline) out.events = std::move(log.events);
  shape_ = shape::event_log;
  state_ = nullptr;
  last_seq_ = log.last_seen;
  restored_ = false;
  return out;
}

std::string_view resource_tracker::shape_name() const {
  switch (shape_) {
    case shape::state:
      return "state";
    case shape::event_log:
      return "event-log";
    case shape::none:
      break;
  }
  return "";
}

}  // namespace tidings::core
