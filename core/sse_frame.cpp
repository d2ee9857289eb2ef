#include "core/sse_frame.hpp"

#include "core/json_text.hpp"

namespace tidings::core {

namespace {

void append_field_line(std::string& out, std::string_view field, std::string_view value) {
  out += field;
  out += ": ";
  for (char ch : value) out += (ch == '\r' || ch == '\n') ? ' ' : ch;
  out += '\n';
}

}  // namespace

void append_data_lines(std::string& out, std::string_view payload) {
  // Every line terminator starts a new data line, so a payload with N breaks
  // becomes N + 1 lines and the parser joins them back with '\n'.
  for (;;) {
    auto brk = payload.find_first_of("\r\n");
    out += "data: ";
    out += payload.substr(0, brk);
    out += '\n';
    if (brk == std::string_view::npos) return;
    std::size_t skip = 1;
    if (payload[brk] == '\r' && brk + 1 < payload.size() && payload[brk + 1] == '\n') skip = 2;
    payload.remove_prefix(brk + skip);
  }
}

std::string sse_event(std::string_view id, std::string_view name, std::string_view data) {
  std::string out;
  out.reserve(id.size() + name.size() + data.size() + 32);
  if (!id.empty()) append_field_line(out, "id", id);
  if (!name.empty()) append_field_line(out, "event", name);
  append_data_lines(out, data);
  out += '\n';
  return out;
}

std::string event_json(std::string_view stream, cursor c, const event& e) {
  std::string out;
  out.reserve(stream.size() + e.path.size() + e.type.size() + e.data_json.size() + 96);
  out += "{\"stream\":";
  append_json_string(out, stream);
  out += ",\"cursor\":\"";
  out += format_cursor(c);
  out += "\",\"path\":";
  append_json_string(out, e.path);
  out += ",\"type\":";
  append_json_string(out, e.type);
  out += ",\"time\":";
  out += std::to_string(e.time_ms);
  out += ",\"data\":";
  out += e.data_json;
  out += '}';
  return out;
}

sse_frame make_sse_frame(std::string_view stream, cursor c, const event& e) {
  sse_frame frame;
  frame.seq = c.seq;
  frame.path = e.path;
  std::string json = event_json(stream, c, e);
  frame.bytes.reserve(json.size() + 64);
  frame.bytes += "id: ";
  frame.bytes += format_cursor(c);
  frame.bytes += '\n';
  frame.body_offset = frame.bytes.size();
  append_data_lines(frame.bytes, json);
  frame.bytes += '\n';
  return frame;
}

std::string sse_retry(int retry_ms) {
  return "retry: " + std::to_string(retry_ms) + "\n\n";
}

}  // namespace tidings::core
