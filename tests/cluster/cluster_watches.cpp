#include "tests/cluster/cluster_watches.hpp"

#include "tests/support/bounded_poll.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/watching.hpp"

namespace tidings::testing {

using nlohmann::json;

std::vector<json> rows_named(const json& list, const std::string& name) {
  std::vector<json> out;
  for (const auto& w : list)
    if (w.value("name", "") == name) out.push_back(w);
  return out;
}

std::map<std::string, int> node_counts(const cluster_nodes& cluster, std::size_t viewer,
                                       const std::string& field) {
  std::map<std::string, int> out;
  for (const auto& row : cluster.nodes_view(viewer).value("nodes", json::array())) {
    if (row.value("state", "") == "down") continue;
    if (!row.contains(field) || !row[field].is_number_integer()) return {};
    out[row.value("id", "")] = row[field].get<int>();
  }
  return out;
}

int total_of(const std::map<std::string, int>& counts) {
  int sum = 0;
  for (const auto& [id, n] : counts) sum += n;
  return sum;
}

std::string describe(const std::map<std::string, int>& counts) {
  if (counts.empty()) return "(no complete view)";
  std::string out;
  for (const auto& [id, n] : counts) out += id + "=" + std::to_string(n) + " ";
  return out;
}

std::map<std::string, int> await_watch_total(const cluster_nodes& cluster, std::size_t viewer, int total,
                                             std::chrono::milliseconds timeout, std::size_t members) {
  if (members == 0) members = cluster.size();
  std::map<std::string, int> counts;
  poll_until(timeout, [&] {
    counts = node_counts(cluster, viewer);
    return counts.size() == members && total_of(counts) == total;
  });
  return counts;
}

std::string running_on(const std::map<std::string, int>& counts) {
  std::string holder;
  for (const auto& [id, n] : counts) {
    if (n == 0) continue;
    if (n != 1 || !holder.empty()) return "";
    holder = id;
  }
  return holder;
}

namespace {

// Reads notices until `done(line)` said true for the last line it needs.
notices_seen read_notices_while(client::sse_stream& session,
                                const std::function<bool(const std::string&)>& done) {
  notices_seen out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (bool finished = false; !finished;) {
    auto got = collect_data_events(session, 1, detail::left_until(deadline));
    if (got.ended != collected::end::count_reached) {
      out.ended = to_string(got.ended);
      if (got.control) out.ended += " by " + got.control->event + " " + got.control->data;
      return out;
    }
    out.cursors.push_back(got.events[0].cursor);
    for (const auto& line : notice_lines(got.events[0])) {
      out.lines.push_back(line);
      finished = done(line) || finished;
    }
  }
  return out;
}

}  // namespace

notices_seen read_notices(client::sse_stream& session, const std::set<std::string>& wanted) {
  auto missing = wanted;
  if (missing.empty()) return {};
  return read_notices_while(session, [&missing](const std::string& line) {
    missing.erase(line);
    return missing.empty();
  });
}

notices_seen read_notices_until(client::sse_stream& session, const std::string& text) {
  return read_notices_while(
      session, [&text](const std::string& line) { return line.find(text) != std::string::npos; });
}

}  // namespace tidings::testing
