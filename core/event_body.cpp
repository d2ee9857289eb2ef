#include "core/event_body.hpp"

#include <utility>

#include <nlohmann/json.hpp>

namespace tidings::core {

namespace {

using json = nlohmann::json;

// Turns one JSON value into an event, or says what is wrong with it.
std::optional<std::string> to_event(const json& j, event& out) {
  if (!j.is_object()) return "an event must be a JSON object";
  for (auto& [key, value] : j.items()) {
    if (key == "path") {
      if (!value.is_string()) return "\"path\" must be a string";
      out.path = value.get<std::string>();
      if (auto err = check_event_path(out.path)) return "\"path\" " + *err;
    } else if (key == "type") {
      if (!value.is_string()) return "\"type\" must be a string";
      out.type = value.get<std::string>();
      if (auto err = check_event_type(out.type)) return "\"type\" " + *err;
    } else if (key == "data") {
      // Compact and valid UTF-8 by construction; a bad string fails here.
      out.data_json = value.dump(-1, ' ', false, json::error_handler_t::strict);
    } else {
      return "unknown field \"" + key + "\" (allowed: path, type, data)";
    }
  }
  return std::nullopt;
}

// The events of a parsed body; may throw json::exception (bad data).
std::optional<std::string> to_events(const json& body, std::vector<event>& events) {
  if (!body.is_array()) {
    event ev;
    if (auto err = to_event(body, ev)) return err;
    events.push_back(std::move(ev));
    return std::nullopt;
  }
  if (body.empty()) return "an empty array publishes nothing";
  if (body.size() > max_publish_events)
    return "at most " + std::to_string(max_publish_events) + " events per publish";
  events.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    event ev;
    if (auto err = to_event(body[i], ev)) return "event " + std::to_string(i) + ": " + *err;
    events.push_back(std::move(ev));
  }
  return std::nullopt;
}

}  // namespace

bool json_nesting_within(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

std::optional<std::string> parse_event_body(std::string_view text, event_body& out) {
  if (!json_nesting_within(text, max_json_nesting))
    return "JSON nests deeper than " + std::to_string(max_json_nesting) + " levels";
  json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) {
    // Parse again for the message: only bad input pays for the exception.
    try {
      [[maybe_unused]] auto again = json::parse(text);
    } catch (const json::exception& e) {
      return std::string("malformed JSON: ") + e.what();
    }
    return "malformed JSON";
  }
  // nlohmann takes a NUL byte outside a string for the end of the input and
  // ignores what follows, so "{}\0junk" parses; it is not JSON.
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    return "malformed JSON: unexpected NUL byte at offset " + std::to_string(nul);
  event_body result;
  result.single = !body.is_array();
  try {
    if (auto err = to_events(body, result.events)) return err;
  } catch (const json::exception& e) {
    return std::string("bad event data: ") + e.what();
  }
  out = std::move(result);
  return std::nullopt;
}

}  // namespace tidings::core
