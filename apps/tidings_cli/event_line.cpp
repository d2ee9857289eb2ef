#include "apps/tidings_cli/event_line.hpp"

#include <nlohmann/json.hpp>

namespace tidings::cli {

namespace {

std::string text_of(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// One notice line as printed: its own newlines start indented lines.
void append_notice_line(std::string& out, const nlohmann::json& line) {
  const std::string text = line.is_string()
                               ? line.get<std::string>()
                               : line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\n  ";
    } else if (ch == '\r') {
      // Dropped: CRLF line ends would otherwise print as '?'.
    } else if ((c < 0x20 && ch != '\t') || c == 0x7f) {
      out += '?';
    } else {
      out += ch;
    }
  }
}

// The notice form of event_line, or nullopt when `ev` is not a notice.
std::optional<std::string> notice_line(const nlohmann::json& ev) {
  const auto type = ev.find("type");
  if (type == ev.end() || *type != "NOTICE") return std::nullopt;
  const auto data = ev.find("data");
  if (data == ev.end() || !data->is_object()) return std::nullopt;
  const auto lines = data->find("lines");
  if (lines == data->end() || !lines->is_array() || lines->empty()) return std::nullopt;
  std::string out = text_of(ev, "cursor");
  out += '\t';
  out += text_of(ev, "stream");
  out += '\t';
  bool first = true;
  for (const auto& line : *lines) {
    if (!first) out += "\n  ";
    first = false;
    append_notice_line(out, line);
  }
  return out;
}

}  // namespace

std::optional<std::string> event_line(const std::string& event_json) {
  const auto ev = nlohmann::json::parse(event_json, nullptr, false);
  if (!ev.is_object()) return std::nullopt;
  if (auto notice = notice_line(ev)) return notice;
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
