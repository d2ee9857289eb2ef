#include "sources/postgres/postgres_events.hpp"

#include <utility>

namespace tidings::sources::postgres {

namespace {

// Deeper values are kept as text: nlohmann copies, dumps and destroys
// recursively, and event-log extraction refuses them anyway.
constexpr int max_payload_depth = 256;

nlohmann::json parse_payload(std::string_view payload) {
  bool too_deep = false;
  auto cb = [&too_deep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max_payload_depth) {
      too_deep = true;
      return false;  // discard, so a hostile payload builds nothing deep
    }
    return true;
  };
  auto value = nlohmann::json::parse(payload.begin(), payload.end(), cb, /*allow_exceptions=*/false);
  if (value.is_discarded() || too_deep) return nlohmann::json(std::string(payload));
  return value;
}

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return {};
}

std::string event_path(std::string_view channel, const nlohmann::json& payload, std::string_view path_field) {
  if (path_field.empty() || !payload.is_object()) return std::string(channel);
  const nlohmann::json* found = nullptr;
  if (path_field.front() == '/') {
    // A malformed pointer is a configuration mistake; it must not drop events.
    try {
      nlohmann::json::json_pointer ptr{std::string(path_field)};
      if (payload.contains(ptr)) found = &payload.at(ptr);
    } catch (const nlohmann::json::exception&) {
      found = nullptr;
    }
  } else if (auto it = payload.find(path_field); it != payload.end()) {
    found = &*it;
  }
  if (!found) return std::string(channel);
  auto text = scalar_text(*found);
  return text.empty() ? std::string(channel) : text;
}

}  // namespace

nlohmann::json notify_event(std::string_view channel, std::string_view payload_text,
                            std::string_view path_field) {
  auto payload = parse_payload(payload_text);
  std::string type = "NOTIFY";
  if (payload.is_object()) {
    if (auto it = payload.find("type");
        it != payload.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      type = it->get<std::string>();
    }
  }
  auto path = event_path(channel, payload, path_field);
  return nlohmann::json{{"type", std::move(type)},
                        {"path", std::move(path)},
                        {"channel", std::string(channel)},
                        {"payload", std::move(payload)}};
}

nlohmann::json gap_event(std::string_view channel) {
  return nlohmann::json{{"type", "GAP"},
                        {"path", std::string(channel)},
                        {"channel", std::string(channel)},
                        {"reason", std::string(gap_reason)}};
}

void event_ring::append(nlohmann::json event) {
  event["seq"] = next_seq_++;
  events_.push_back(std::move(event));
  while (events_.size() > capacity_) events_.pop_front();
}

std::string event_ring::text() const {
  std::string out = R"({"events":[)";
  bool first = true;
  for (const auto& e : events_) {
    if (!first) out.push_back(',');
    first = false;
    // Payloads are arbitrary bytes: replace invalid UTF-8 instead of throwing.
    out += e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  out += "]}";
  return out;
}

}  // namespace tidings::sources::postgres
