#include "apps/tidings_cli/event_line.hpp"

#include <nlohmann/json.hpp>

namespace tidings::cli {

namespace {

std::string text_of(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

std::optional<std::string> event_line(const std::string& event_json) {
  const auto ev = nlohmann::json::parse(event_json, nullptr, false);
  if (!ev.is_object()) return std::nullopt;
  std::string line = text_of(ev, "cursor");
  line += '\t';
  line += text_of(ev, "stream");
  line += '\t';
  line += text_of(ev, "path");
  line += '\t';
  line += text_of(ev, "type");
  line += '\t';
  const auto data = ev.find("data");
  // Invalid UTF-8 in a payload should not cost the whole line.
  line += data == ev.end() ? std::string("null")
                           : data->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return line;
}

std::string error_message(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  return body.empty() ? std::string("(no body)") : body;
}

}  // namespace tidings::cli
