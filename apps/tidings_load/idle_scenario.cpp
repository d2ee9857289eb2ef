// idle: what an idle SSE session costs the node in memory. The node's VmRSS
// is read before the first session opens and after every session had its
// hello; the difference is spread over the sessions. For nchan the process
// is its single nginx worker, which holds every subscriber.

#include <cstdio>
#include <iostream>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "apps/tidings_load/session_pool.hpp"

namespace tidings::load {

namespace {

// A hello frame is about 100 bytes; small buffers keep the client lean.
constexpr std::size_t idle_read_size = 1024;

}  // namespace

int run_idle(scenario_context& ctx) {
  const auto& o = ctx.opts;
  session_pool pool(ctx.ioc, ctx.server, o.peer, o.stream, o.sessions, o.connect_window, idle_read_size,
                    nullptr);
  boost::asio::steady_timer deadline(ctx.ioc);
  std::string failure;
  std::optional<long long> rss_before, rss_after;
  if (ctx.node_pid) rss_before = rss_bytes(*ctx.node_pid);
  const auto started = steady_ns();
  std::int64_t ready_ns = 0;

  auto stop = [&] {
    deadline.cancel();
    pool.close_all();
  };
  deadline.expires_after(std::chrono::seconds(o.timeout_s));
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    failure = "timed out while opening sessions (" + std::to_string(pool.ready()) + "/" +
              std::to_string(o.sessions) + " had their hello)";
    stop();
  });
  pool.open(
      [&] {
        ready_ns = steady_ns();
        if (ctx.node_pid) rss_after = rss_bytes(*ctx.node_pid);
        stop();
      },
      [&](const std::string& why) {
        if (failure.empty()) failure = "while opening sessions: " + why;
        stop();
      });
  ctx.ioc.run();
  ctx.ioc.restart();
  if (!failure.empty()) {
    std::cerr << "tidings-load: " << failure << "\n";
    return 1;
  }

  const double open_s = static_cast<double>(ready_ns - started) / 1e9;
  const auto client_rss = rss_bytes(getpid());
  std::optional<double> per_session;
  if (rss_before && rss_after) {
    per_session = static_cast<double>(*rss_after - *rss_before) / static_cast<double>(o.sessions);
  }
  std::printf("idle (%s): %zu sessions opened in %.3f s\n", target_name(o.peer), o.sessions, open_s);
  if (per_session) {
    std::printf("  node rss          %.1f MiB before, %.1f MiB after\n",
                static_cast<double>(*rss_before) / 1048576.0, static_cast<double>(*rss_after) / 1048576.0);
    std::printf("  per idle session  %.0f bytes\n", *per_session);
  } else {
    std::printf("  node rss          n/a (give --pid with --server)\n");
  }
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json j = {
      {"scenario", "idle"},
      {"target", target_name(o.peer)},
      {"sessions", o.sessions},
      {"open_s", open_s},
      {"node_rss_before", opt(rss_before)},
      {"node_rss_after", opt(rss_after)},
      {"node_rss_per_session", opt(per_session)},
      {"client_rss", opt(client_rss)},
  };
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace tidings::load
