// idle-streams: what streams nobody uses cost the node, and whether it gives
// that memory back (issue 28). C streams (--streams, 20000) get one event
// each from two publishers, then nothing; the node (started with a short
// --stream-idle-ms) must release every one of them: the run waits for its
// tidings_streams_released_total{reason="idle"} to reach C and fails past
// --timeout-s. It prints the node's RSS at the start, with the streams held
// and after their release, and bytes per stream of each difference. Then it
// reads one released stream back: its event, under the cursor it was
// acknowledged with.

#include <chrono>
#include <iostream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/tidings_load/history_reader.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "client/http_client.hpp"

namespace tidings::load {
namespace {

using json = nlohmann::json;

client::header_list headers_of(const load_options& o) {
  client::header_list h{{"Content-Type", "application/json"}};
  if (!o.token.empty()) h.emplace_back("Authorization", "Bearer " + o.token);
  return h;
}

// The idle releases the node counted; nullopt when /metrics did not answer.
std::optional<double> released(const client::endpoint& ep, const load_options& o) {
  auto r = client::request(ep, "GET", "/metrics", {}, headers_of(o));
  if (r.status != 200) return std::nullopt;
  static const std::regex line(R"(tidings_streams_released_total\{reason="idle"\} ([0-9.e+]+))");
  std::smatch m;
  if (!std::regex_search(r.body, m, line)) return 0.0;
  return std::stod(m[1].str());
}

std::string name_of(const load_options& o, std::size_t i) {
  return o.stream + "-" + std::to_string(i);
}

}  // namespace

int run_idle_streams(scenario_context& ctx) {
  const auto& o = ctx.opts;
  const std::size_t count = o.streams;
  const client::endpoint ep{ctx.server.address().to_string(), ctx.server.port()};
  const auto rss_start = rss_bytes(ctx.node_pids);

  std::vector<std::string> first_cursor(1);
  std::vector<std::string> errors(2);
  auto create = [&](std::size_t part) {
    try {
      client::http_connection conn(ep);
      for (std::size_t i = part; i < count; i += 2) {
        auto r = conn.request("POST", "/v1/streams/" + name_of(o, i) + "/events", R"({"path":"/idle"})",
                              headers_of(o));
        if (r.status != 201) throw std::runtime_error("publish to " + name_of(o, i) + ": " + r.body);
        if (i == 0) first_cursor[0] = json::parse(r.body)["cursor"].get<std::string>();
      }
    } catch (const std::exception& e) {
      errors[part] = e.what();
    }
  };
  const auto started = std::chrono::steady_clock::now();
  std::thread other(create, 1);
  create(0);
  other.join();
  for (const auto& e : errors)
    if (!e.empty()) {
      std::cerr << "tidings-load: " << e << "\n";
      return 1;
    }
  const auto created_in = std::chrono::steady_clock::now() - started;
  const auto rss_held = rss_bytes(ctx.node_pids);

  std::optional<double> seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    seen = released(ep, o);
    if (seen && *seen >= static_cast<double>(count)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling the node's counter
  }
  // A released hub ends 2 s after its release (it forwards late requests
  // until then): measure once the last ones are gone.
  if (seen && *seen >= static_cast<double>(count)) std::this_thread::sleep_for(std::chrono::seconds(3));
  const auto rss_released = rss_bytes(ctx.node_pids);

  // One of them, back from the store on demand.
  std::string back_error;
  try {
    stream_reader reader(ep, o.token);
    auto head = reader.head(name_of(o, 0));
    auto events = reader.events_after(name_of(o, 0), 0);
    auto acked = split_cursor(first_cursor[0]);
    if (!acked || head.epoch != acked->first || events.size() != 1 || events[0].first != acked->second)
      back_error = "stream " + name_of(o, 0) + " read back " + std::to_string(events.size()) +
                   " events at head " + head.epoch + ":" + std::to_string(head.seq) + ", not its one event " +
                   first_cursor[0];
  } catch (const std::exception& e) {
    back_error = e.what();
  }

  auto per_stream = [&](std::optional<long long> a, std::optional<long long> b) -> json {
    if (!a || !b) return nullptr;
    return (*b - *a) / static_cast<long long>(count);
  };
  const bool all_released = seen && *seen >= static_cast<double>(count);
  json summary{{"scenario", "idle-streams"},
               {"streams", count},
               {"created_s", std::chrono::duration<double>(created_in).count()},
               {"released", seen ? json(*seen) : json(nullptr)},
               {"rss_start", rss_start ? json(*rss_start) : json(nullptr)},
               {"rss_held", rss_held ? json(*rss_held) : json(nullptr)},
               {"rss_released", rss_released ? json(*rss_released) : json(nullptr)},
               {"bytes_per_stream_held", per_stream(rss_start, rss_held)},
               {"bytes_per_stream_after_release", per_stream(rss_start, rss_released)},
               {"read_back", back_error.empty() ? "ok" : back_error}};
  std::cout << "streams: " << count << " created in " << summary["created_s"].get<double>()
            << " s; released idle: " << (seen ? std::to_string(static_cast<long long>(*seen)) : "unknown")
            << "\n";
  std::cout << "node RSS: " << summary["rss_start"] << " at start, " << summary["rss_held"]
            << " with the streams, " << summary["rss_released"]
            << " after their release (bytes per stream: held " << summary["bytes_per_stream_held"]
            << ", after " << summary["bytes_per_stream_after_release"] << ")\n";
  std::cout << summary.dump() << "\n";
  if (!all_released) std::cerr << "tidings-load: not every idle stream was released within --timeout-s\n";
  if (!back_error.empty()) std::cerr << "tidings-load: " << back_error << "\n";
  return all_released && back_error.empty() ? 0 : 1;
}

}  // namespace tidings::load
