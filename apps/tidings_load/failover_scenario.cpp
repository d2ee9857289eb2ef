// failover: how long a stream refuses writes when its leader dies (issue
// 26's benchmark). Each round starts a fresh cluster (M nodes, an etcd of
// 1 or 3 members, 2 s member leases), creates a stream, waits until its
// owner's followers are in sync, and runs K publishers at R events/s in
// all through the other nodes, every event with an Idempotency-Key and
// retried (on the next node, after a short pause) until acknowledged. Then
// it kills the owner with SIGKILL and measures the time from the kill to
// the first acknowledgement of a request sent after it, and the longest gap
// between two acknowledgements. After the publishers stop, the stream is
// read back through every surviving node: every acknowledged event once,
// under the cursor it was acknowledged with; a loss or a cursor given to
// two events fails the run.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/tidings_load/cluster_nodes.hpp"
#include "apps/tidings_load/history_reader.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "client/http_client.hpp"

namespace tidings::load {

namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto request_timeout = milliseconds(1000);
constexpr auto retry_pause = milliseconds(20);
constexpr auto warmup = milliseconds(1000);
constexpr auto after_failover = milliseconds(1000);
constexpr auto failover_limit = std::chrono::seconds(30);

struct acked {
  std::string key;
  std::string cursor;
  clock::time_point sent;  // the attempt that was acknowledged
  clock::time_point at;
};

struct round_result {
  std::string error;  // the round could not be run or checked; "" when it was
  std::size_t owner = 0;
  std::optional<double> failover_ms;
  double longest_gap_ms = 0;
  std::size_t acknowledged = 0;
  std::size_t lost = 0;       // acknowledged, not read back at its cursor
  std::size_t misplaced = 0;  // read back under another cursor, or more than once
};

client::header_list headers_for(const std::string& token) {
  client::header_list h{{"Content-Type", "application/json"}};
  if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
  return h;
}

// Publishes one event until some node acknowledges it (or `give_up` passes);
// nodes are tried in turn, starting at `first`.
std::optional<acked> publish_until_acked(const std::vector<client::endpoint>& nodes, std::size_t first,
                                         const std::string& stream, const std::string& key,
                                         const std::string& token, clock::time_point give_up) {
  auto headers = headers_for(token);
  headers.emplace_back("Idempotency-Key", key);
  const auto body = json{{"path", "/failover"}, {"type", "CHANGED"}, {"data", {{"key", key}}}}.dump();
  for (std::size_t attempt = 0; clock::now() < give_up; ++attempt) {
    const auto& node = nodes[(first + attempt) % nodes.size()];
    const auto sent = clock::now();
    try {
      auto r =
          client::request(node, "POST", "/v1/streams/" + stream + "/events", body, headers, request_timeout);
      if (r.status == 200 || r.status == 201) {
        auto cursor = json::parse(r.body, nullptr, false).value("cursor", std::string{});
        if (!cursor.empty()) return acked{key, cursor, sent, clock::now()};
      }
    } catch (const client::transport_error&) {
      // the node or its owner did not answer in time: the next node
    }
    std::this_thread::sleep_for(retry_pause);  // pacing a retry, not awaiting a condition
  }
  return std::nullopt;
}

// The stream's owner as the nodes' admin views say, once every follower it
// lists is in sync; nullopt when that is not so within `timeout`.
std::optional<std::size_t> await_owner_in_sync(cluster_nodes& cluster, const std::string& stream,
                                               const std::string& token, milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  while (clock::now() < deadline) {
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      try {
        auto r = client::request(cluster.endpoints()[i], "GET", "/admin/v1/streams", {}, headers_for(token),
                                 milliseconds(2000));
        auto view = json::parse(r.body, nullptr, false);
        if (r.status != 200 || !view.contains("streams")) continue;
        for (const auto& row : view["streams"]) {
          if (row.value("name", "") != stream || row.value("role", "") != "owner") continue;
          const auto& rep = row.value("replication", json::object());
          const auto followers = rep.value("followers", json::array());
          const bool in_sync =
              !followers.empty() && std::all_of(followers.begin(), followers.end(),
                                                [](auto& f) { return f.value("state", "") == "in_sync"; });
          if (in_sync) return i;
        }
      } catch (const std::exception&) {
        // not answering yet: asked again below
      }
    }
    std::this_thread::sleep_for(milliseconds(50));  // the admin view shows it only when asked
  }
  return std::nullopt;
}

// Compares what every survivor reads with what was acknowledged.
void check(cluster_nodes& cluster, std::size_t owner, const std::string& stream, const std::string& token,
           const std::vector<acked>& acks, round_result& out) {
  std::map<std::string, std::string> cursor_of;  // key -> acknowledged cursor
  for (const auto& a : acks) cursor_of[a.key] = a.cursor;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (i == owner) continue;
    // The history API serves the stream's current epoch: every event read
    // is under it.
    std::vector<std::pair<std::string, std::string>> events;  // cursor, the key in its data
    try {
      stream_reader reader(cluster.endpoints()[i], token);
      const auto epoch = reader.head(stream).epoch;
      for (const auto& [seq, data] : reader.events_after(stream, 0))
        events.emplace_back(epoch + ":" + std::to_string(seq), data.is_object() ? data.value("key", "") : "");
    } catch (const std::exception& e) {
      out.error = "node " + std::to_string(i + 1) + " could not be read: " + e.what();
      return;
    }
    std::map<std::string, std::vector<std::string>> seen;  // key -> cursors it was read under
    for (const auto& [cursor, key] : events) seen[key].push_back(cursor);
    for (const auto& [key, cursor] : cursor_of) {
      auto it = seen.find(key);
      if (it == seen.end() || std::find(it->second.begin(), it->second.end(), cursor) == it->second.end())
        ++out.lost;
      else if (it->second.size() > 1)
        ++out.misplaced;
    }
  }
}

round_result run_round(const load_options& opts, std::size_t round) {
  round_result out;
  std::optional<cluster_nodes> cluster;
  try {
    cluster.emplace(opts.tidingsd, opts.nodes, opts.node_args, opts.token, std::chrono::seconds(20),
                    std::chrono::seconds(30), opts.etcd_members);
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  const auto stream = opts.stream + "-" + std::to_string(round);
  const auto all = cluster->endpoints();
  const auto prefix = "r" + std::to_string(round) + "-";
  if (!publish_until_acked(all, 0, stream, prefix + "first", opts.token,
                           clock::now() + std::chrono::seconds(10))) {
    out.error = "the stream could not be created";
    return out;
  }
  auto owner = await_owner_in_sync(*cluster, stream, opts.token, std::chrono::seconds(15));
  if (!owner) {
    out.error = "no owner with its followers in sync within 15 s";
    return out;
  }
  out.owner = *owner;
  std::vector<client::endpoint> survivors;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (i != *owner) survivors.push_back(all[i]);

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<acked> acks;
  std::atomic<bool> stop{false};
  const auto interval = std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double>(static_cast<double>(opts.publishers) / opts.rate));
  std::vector<std::thread> publishers;
  for (std::size_t p = 0; p < opts.publishers; ++p) {
    publishers.emplace_back([&, p] {
      auto due = clock::now() + interval * p / opts.publishers;
      for (std::size_t n = 0; !stop; ++n) {
        std::this_thread::sleep_until(due);  // the offered rate
        due += interval;
        const auto key = prefix + std::to_string(p) + "-" + std::to_string(n);
        auto a =
            publish_until_acked(survivors, p + n, stream, key, opts.token, clock::now() + failover_limit);
        if (!a) continue;  // never acknowledged: it may or may not be stored, and is not checked
        std::lock_guard lock(mutex);
        acks.push_back(std::move(*a));
        changed.notify_all();
      }
    });
  }

  std::this_thread::sleep_for(warmup);  // publishing before the kill
  const auto killed_at = clock::now();
  cluster->node(*owner).kill9();
  {
    std::unique_lock lock(mutex);
    const bool back = changed.wait_until(lock, killed_at + failover_limit, [&] {
      return std::any_of(acks.begin(), acks.end(), [&](const acked& a) { return a.sent >= killed_at; });
    });
    if (!back) out.error = "no write acknowledged within 30 s of the kill";
  }
  if (out.error.empty()) std::this_thread::sleep_for(after_failover);  // publishing after it
  stop = true;
  for (auto& t : publishers) t.join();

  std::vector<clock::time_point> times;
  for (const auto& a : acks) {
    times.push_back(a.at);
    if (a.sent >= killed_at) {
      const double ms = std::chrono::duration<double, std::milli>(a.at - killed_at).count();
      out.failover_ms = std::min(out.failover_ms.value_or(ms), ms);
    }
  }
  std::sort(times.begin(), times.end());
  for (std::size_t i = 1; i < times.size(); ++i)
    out.longest_gap_ms = std::max(out.longest_gap_ms,
                                  std::chrono::duration<double, std::milli>(times[i] - times[i - 1]).count());
  out.acknowledged = acks.size();
  if (out.error.empty()) check(*cluster, *owner, stream, opts.token, acks, out);
  cluster->stop(std::chrono::seconds(15));
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

json spread(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"median", median(v)},
          {"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())},
          {"all", v}};
}

}  // namespace

int run_failover(const load_options& opts) {
  const double lease_ms = cluster_nodes::lease_seconds * 1000.0;
  std::printf("failover: %zu nodes, etcd of %zu, leases of %d s; %zu publishers at %.0f events/s in all\n",
              opts.nodes, opts.etcd_members, cluster_nodes::lease_seconds, opts.publishers, opts.rate);
  std::vector<double> failovers, gaps;
  std::size_t acknowledged = 0, lost = 0, misplaced = 0, failed = 0;
  for (std::size_t round = 1; round <= opts.rounds; ++round) {
    auto r = run_round(opts, round);
    acknowledged += r.acknowledged;
    lost += r.lost;
    misplaced += r.misplaced;
    if (!r.error.empty()) {
      ++failed;
      std::printf("  round %zu: FAILED: %s\n", round, r.error.c_str());
      continue;
    }
    failovers.push_back(*r.failover_ms);
    gaps.push_back(r.longest_gap_ms);
    std::printf(
        "  round %zu: owner node %zu killed; first acknowledged write %.0f ms later (%.2f leases), "
        "longest gap %.0f ms; %zu acknowledged, %zu lost, %zu misplaced\n",
        round, r.owner + 1, *r.failover_ms, *r.failover_ms / lease_ms, r.longest_gap_ms, r.acknowledged,
        r.lost, r.misplaced);
  }
  if (!failovers.empty())
    std::printf("  failover median %.0f ms (%.2f leases; target: one lease + 1 s = %.0f ms), max %.0f ms\n",
                median(failovers), median(failovers) / lease_ms, lease_ms + 1000,
                *std::max_element(failovers.begin(), failovers.end()));
  json summary{{"scenario", "failover"},
               {"nodes", opts.nodes},
               {"etcd_members", opts.etcd_members},
               {"lease_s", cluster_nodes::lease_seconds},
               {"rounds", opts.rounds},
               {"failed_rounds", failed},
               {"failover_ms", spread(failovers)},
               {"longest_gap_ms", spread(gaps)},
               {"acknowledged", acknowledged},
               {"lost", lost},
               {"misplaced", misplaced}};
  std::printf("%s\n", summary.dump().c_str());
  return failed || lost || misplaced ? 1 : 0;
}

}  // namespace tidings::load
