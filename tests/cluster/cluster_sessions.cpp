#include "tests/cluster/cluster_sessions.hpp"

#include <algorithm>
#include <stdexcept>

#include "tests/support/bounded_poll.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/replicated_traffic.hpp"

namespace tidings::testing {

std::vector<node_session> open_sessions(cluster_nodes& cluster, const std::vector<std::size_t>& nodes,
                                        int per_node, const std::string& stream) {
  std::vector<node_session> out;
  for (auto node : nodes) {
    for (int k = 0; k < per_node; ++k) {
      node_session s;
      s.node = node;
      s.stream = std::make_unique<client::sse_stream>(cluster.endpoint(node), sse_target({stream}));
      try {
        await_hello(*s.stream);
      } catch (const std::exception& e) {
        throw std::runtime_error("session " + std::to_string(k) + " on node " + std::to_string(node) + ": " +
                                 e.what());
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<std::string> publish_numbered(const client::endpoint& ep, const std::string& stream, int first,
                                          int count) {
  client::http_connection conn(ep);
  std::vector<std::string> cursors;
  for (int i = first; i < first + count; ++i)
    cursors.push_back(publish(conn, stream, event_json("/e", "ADDED", nlohmann::json{{"i", i}})));
  return cursors;
}

std::vector<std::string> cursors_of(const std::vector<data_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.cursor);
  return out;
}

std::vector<std::string> ids_of(const std::vector<data_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.id);
  return out;
}

std::string epoch_of(const std::string& cursor) {
  auto colon = cursor.find(':');
  if (colon == std::string::npos) throw std::runtime_error("not a cursor: '" + cursor + "'");
  return cursor.substr(0, colon);
}

stream_info stream_info_of(const client::endpoint& ep, const std::string& stream) {
  auto r = client::request(ep, "GET", "/v1/streams/" + stream);
  stream_info out;
  out.status = r.status;
  if (r.status == 200) out.body = parse_body(r);
  return out;
}

nlohmann::json admin_stream_row(const client::endpoint& ep, const std::string& stream) {
  auto r = client::request(ep, "GET", "/admin/v1/streams");
  if (r.status != 200)
    throw std::runtime_error("GET /admin/v1/streams: status " + std::to_string(r.status) + ", body " +
                             r.body);
  const auto body = parse_body(r);
  for (const auto& row : body.value("streams", nlohmann::json::array()))
    if (row.value("name", "") == stream) return row;
  return nullptr;
}

nlohmann::json node_row(const nlohmann::json& view, const std::string& id) {
  for (const auto& row : view.value("nodes", nlohmann::json::array()))
    if (row.value("id", "") == id) return row;
  return nullptr;
}

std::vector<std::string> feeding(const nlohmann::json& row, const std::string& stream) {
  std::vector<std::string> out;
  for (const auto& f : row.value("feeds", nlohmann::json::array()))
    if (f.value("tenant", "") == "default" && f.value("stream", "") == stream)
      for (const auto& n : f.value("nodes", nlohmann::json::array())) out.push_back(n.get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

int alive_members(const nlohmann::json& view) {
  int alive = 0;
  for (const auto& row : view.value("nodes", nlohmann::json::array()))
    if (row.value("state", "") == "alive") ++alive;
  return alive;
}

client::http_response publish_keyed(const client::endpoint& ep, const std::string& stream, int i) {
  return client::request(
      ep, "POST", events_target(stream), event_json("/e", "ADDED", nlohmann::json{{"i", i}}),
      {{"Content-Type", "application/json"}, {"Idempotency-Key", stream + "-" + std::to_string(i)}},
      std::chrono::seconds(15));
}

client::http_response await_refused(const client::endpoint& ep, const std::string& stream, int i,
                                    const std::vector<std::string>& reasons) {
  client::http_response r;
  poll_until(std::chrono::seconds(20), [&] {
    r = publish_keyed(ep, stream, i);
    return r.status == 503 && std::any_of(reasons.begin(), reasons.end(), [&](const std::string& why) {
             return r.body.find(why) != std::string::npos;
           });
  });
  return r;
}

std::string read_back_everywhere(cluster_nodes& cluster, const std::string& stream, const std::string& since,
                                 const std::map<int, std::string>& acked) {
  std::string problems;
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    if (!cluster.running(n)) continue;
    stream_reader late({cluster.endpoint(n)}, stream, since, acked.size(), std::chrono::seconds(20));
    late.await_started(std::chrono::seconds(10));
    late.join();
    auto diff = compare_with_acknowledged(late.events(), acked);
    if (!late.controls().empty()) diff += " controls " + nlohmann::json(late.controls()).dump();
    if (!diff.empty())
      problems += "node " + std::to_string(n) + " (" + std::to_string(late.events().size()) +
                  " events): " + diff + "\n";
  }
  return problems;
}

}  // namespace tidings::testing
