#include "apps/tidings_load/nodes_view.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace tidings::load {

using nlohmann::json;

json fetch_nodes_view(const client::endpoint& node, const std::string& token) {
  client::header_list headers;
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  // The view answers within 2 s by contract; the rest is slack for a busy machine.
  const auto r = client::request(node, "GET", "/admin/v1/nodes", {}, headers, std::chrono::seconds(5));
  const std::string where = "GET /admin/v1/nodes on " + node.host + ":" + std::to_string(node.port);
  if (r.status != 200)
    throw std::runtime_error(where + ": status " + std::to_string(r.status) + ", " + r.body);
  auto view = json::parse(r.body, nullptr, false);
  if (!view.is_object() || !view.contains("nodes") || !view["nodes"].is_array())
    throw std::runtime_error(where + ": not a {\"nodes\":[...]} body: " + r.body.substr(0, 200));
  return view;
}

std::size_t alive_count(const json& view) {
  return static_cast<std::size_t>(
      std::count_if(view["nodes"].begin(), view["nodes"].end(),
                    [](const json& row) { return row.is_object() && row.value("state", "") == "alive"; }));
}

json await_alive(const client::endpoint& node, std::size_t count, const std::string& token,
                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::milliseconds pause{25};
  std::string last;
  for (;;) {
    try {
      auto view = fetch_nodes_view(node, token);
      if (alive_count(view) >= count) return view;
      last = view.dump();
    } catch (const std::exception& e) {
      // A node still starting may refuse or answer 503 for a moment.
      last = e.what();
    }
    if (std::chrono::steady_clock::now() + pause > deadline)
      throw std::runtime_error("the cluster did not list " + std::to_string(count) + " nodes alive within " +
                               std::to_string(timeout.count()) + " ms; last answer: " + last.substr(0, 2000));
    // Membership spreads in gossip rounds: a growing pause, bounded by the
    // deadline, is how to watch it settle without hammering the node.
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(250));
  }
}

std::string node_id_at(const json& view, const std::string& address) {
  for (const auto& row : view["nodes"])
    if (row.is_object() && row.value("address", "") == address) return row.value("id", "");
  return {};
}

std::optional<stream_feeds> feeds_of(const json& view, const std::string& stream) {
  for (const auto& row : view["nodes"]) {
    if (!row.is_object() || !row.contains("feeds") || !row["feeds"].is_array()) continue;
    for (const auto& feed : row["feeds"]) {
      if (!feed.is_object() || feed.value("stream", "") != stream) continue;
      stream_feeds out{row.value("id", ""), {}};
      if (feed.contains("nodes") && feed["nodes"].is_array())
        for (const auto& id : feed["nodes"])
          if (id.is_string()) out.nodes.push_back(id.get<std::string>());
      return out;
    }
  }
  return std::nullopt;
}

}  // namespace tidings::load
