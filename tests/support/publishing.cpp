#include "tests/support/publishing.hpp"

#include <stdexcept>

namespace tidings::testing {

namespace {

const client::header_list json_content{{"Content-Type", "application/json"}};

client::header_list with_json_content(const client::header_list& headers) {
  client::header_list all = json_content;
  all.insert(all.end(), headers.begin(), headers.end());
  return all;
}

[[noreturn]] void unexpected(const std::string& what, const client::http_response& r) {
  throw std::runtime_error(what + ": status " + std::to_string(r.status) + ", body " + r.body);
}

std::string single_cursor(const client::http_response& r) {
  if (r.status != 201) unexpected("publish", r);
  auto body = parse_body(r);
  if (!body.is_object() || !body.contains("cursor") || !body["cursor"].is_string())
    unexpected("publish reply without a \"cursor\" string", r);
  return body["cursor"].get<std::string>();
}

std::vector<std::string> batch_cursors(const client::http_response& r) {
  if (r.status != 201) unexpected("publish batch", r);
  auto body = parse_body(r);
  if (!body.is_object() || !body.contains("cursors") || !body["cursors"].is_array())
    unexpected("publish batch reply without a \"cursors\" array", r);
  std::vector<std::string> out;
  for (const auto& c : body["cursors"]) {
    if (!c.is_string()) unexpected("publish batch reply with a non-string cursor", r);
    out.push_back(c.get<std::string>());
  }
  return out;
}

}  // namespace

std::string events_target(const std::string& stream) {
  return "/v1/streams/" + stream + "/events";
}

nlohmann::json parse_body(const client::http_response& response) {
  auto parsed = nlohmann::json::parse(response.body, nullptr, false);
  if (parsed.is_discarded()) unexpected("body is not JSON", response);
  return parsed;
}

std::string publish(client::http_connection& conn, const std::string& stream, const std::string& event_json,
                    const client::header_list& headers) {
  return single_cursor(conn.request("POST", events_target(stream), event_json, with_json_content(headers)));
}

std::string publish(const client::endpoint& ep, const std::string& stream, const std::string& event_json,
                    const client::header_list& headers) {
  return single_cursor(
      client::request(ep, "POST", events_target(stream), event_json, with_json_content(headers)));
}

std::vector<std::string> publish_batch(client::http_connection& conn, const std::string& stream,
                                       const std::string& array_json) {
  return batch_cursors(conn.request("POST", events_target(stream), array_json, json_content));
}

std::vector<std::string> publish_batch(const client::endpoint& ep, const std::string& stream,
                                       const std::string& array_json) {
  return batch_cursors(client::request(ep, "POST", events_target(stream), array_json, json_content));
}

std::string event_json(const std::string& path, const std::string& type, const nlohmann::json& data) {
  return nlohmann::json{{"path", path}, {"type", type}, {"data", data}}.dump();
}

std::vector<nlohmann::json> read_history(const client::endpoint& ep, const std::string& stream,
                                         const std::string& since) {
  std::vector<nlohmann::json> events;
  client::http_connection conn(ep);
  std::string from = since;
  // Bounded so that a server whose `next` never advances fails instead of hanging.
  for (int page = 0; page < 100000; ++page) {
    std::string target = events_target(stream) + "?limit=1000";
    if (!from.empty()) target += "&since=" + client::url_encode(from);
    auto r = conn.request("GET", target);
    if (r.status != 200) unexpected("history " + target, r);
    auto body = parse_body(r);
    if (!body.contains("events") || !body["events"].is_array())
      unexpected("history page without \"events\"", r);
    if (body["events"].empty()) return events;
    for (auto& e : body["events"]) events.push_back(std::move(e));
    if (!body.contains("next") || !body["next"].is_string())
      unexpected("history page with events but no \"next\"", r);
    auto next = body["next"].get<std::string>();
    if (next == from) unexpected("history \"next\" did not advance", r);
    if (body.contains("head") && body["head"] == next) return events;
    from = next;
  }
  throw std::runtime_error("history of " + stream + " did not end");
}

}  // namespace tidings::testing
