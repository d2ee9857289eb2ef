#include "tests/support/sse_reading.hpp"

#include <stdexcept>

namespace tidings::testing {

namespace {

std::string string_field(const nlohmann::json& j, const char* name, const std::string& raw) {
  if (!j.contains(name) || !j[name].is_string())
    throw std::runtime_error(std::string("SSE data without a \"") + name + "\" string: " + raw);
  return j[name].get<std::string>();
}

}  // namespace

std::string uri_target(const std::string& uri) {
  return "/v1/sse?uri=" + client::url_encode(uri);
}

std::string sse_target(const std::vector<std::string>& selectors, const std::string& since) {
  std::string target = "/v1/sse";
  char sep = '?';
  for (const auto& s : selectors) {
    target += sep;
    target += "stream=" + client::url_encode(s);
    sep = '&';
  }
  if (!since.empty()) {
    target += sep;
    target += "since=" + client::url_encode(since);
  }
  return target;
}

nlohmann::json message_json(const core::sse_message& message) {
  auto j = nlohmann::json::parse(message.data, nullptr, false);
  if (j.is_discarded())
    throw std::runtime_error("SSE data (event '" + message.event + "') is not JSON: " + message.data);
  return j;
}

data_event parse_data_event(const core::sse_message& message) {
  if (!message.event.empty())
    throw std::runtime_error("expected a data event, got event '" + message.event + "': " + message.data);
  auto j = message_json(message);
  data_event e;
  e.id = message.id.value_or("");
  e.stream = string_field(j, "stream", message.data);
  e.cursor = string_field(j, "cursor", message.data);
  e.path = string_field(j, "path", message.data);
  e.type = string_field(j, "type", message.data);
  if (!j.contains("data")) throw std::runtime_error("SSE data without \"data\": " + message.data);
  e.data = j["data"];
  e.raw = std::move(j);
  return e;
}

nlohmann::json await_hello(client::sse_stream& session, std::chrono::milliseconds timeout) {
  if (session.status() != 200)
    throw std::runtime_error("SSE status " + std::to_string(session.status()) + ": " + session.error_body());
  core::sse_message m;
  auto r = session.next(m, timeout);
  if (r != client::sse_stream::result::message)
    throw std::runtime_error(r == client::sse_stream::result::closed ? "SSE closed before hello"
                                                                     : "no hello within the timeout");
  if (m.event != "hello")
    throw std::runtime_error("first SSE message is '" + m.event + "', not hello: " + m.data);
  return message_json(m);
}

const char* to_string(collected::end e) {
  switch (e) {
    case collected::end::count_reached:
      return "count_reached";
    case collected::end::control:
      return "control";
    case collected::end::closed:
      return "closed";
    case collected::end::timeout:
      return "timeout";
  }
  return "?";
}

namespace detail {

bool take_message(collected& out, core::sse_message&& m) {
  if (m.event == "heartbeat") return true;
  if (!m.event.empty()) {
    out.ended = collected::end::control;
    out.control = std::move(m);
    return false;
  }
  out.events.push_back(parse_data_event(m));
  return true;
}

}  // namespace detail

core::cursor cursor_of(const std::string& text) {
  auto c = core::parse_cursor(text);
  if (!c) throw std::runtime_error("not a cursor: '" + text + "'");
  return *c;
}

std::vector<std::uint64_t> seqs_of(const std::vector<data_event>& events) {
  std::vector<std::uint64_t> out;
  out.reserve(events.size());
  for (const auto& e : events) out.push_back(cursor_of(e.cursor).seq);
  return out;
}

}  // namespace tidings::testing
