// idle: what an idle SSE session costs the node in memory. The node's VmRSS
// is read before the first session opens and after every session had its
// hello; the difference is spread over the sessions. For nchan the process
// is its single nginx worker, which holds every subscriber.
//
// With --hold-s the sessions stay open after that, as an audience beside
// something else (the browser tests put 1000 of them on the document the
// browsers show): every event is counted per session and its seq must rise.

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "apps/tidings_load/session_pool.hpp"
#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

namespace {

// A hello frame is about 100 bytes; small buffers keep the client lean.
constexpr std::size_t idle_read_size = 1024;

// Events per session during the hold, and whether each session's seqs rose.
class hold_counter final : public event_sink {
 public:
  // `on_all_reached` runs once every session has had `target` events (0: never).
  hold_counter(std::size_t sessions, std::size_t target, std::function<void()> on_all_reached)
      : events_(sessions, 0),
        last_seq_(sessions, 0),
        target_(target),
        on_all_reached_(std::move(on_all_reached)) {}

  void on_event(std::size_t session, const delivery& d) override {
    if (++events_[session] == target_ && ++reached_ == events_.size()) on_all_reached_();
    // nchan's events carry no cursor of ours (seq 0): nothing to check.
    if (d.seq != 0 && d.seq <= last_seq_[session]) ++out_of_order_;
    last_seq_[session] = d.seq;
  }

  nlohmann::json report() const {
    const auto [lo, hi] = std::minmax_element(events_.begin(), events_.end());
    std::size_t total = 0;
    for (auto n : events_) total += n;
    return {{"events_min", events_.empty() ? 0 : *lo},
            {"events_max", events_.empty() ? 0 : *hi},
            {"events_total", total},
            {"out_of_order", out_of_order_}};
  }

 private:
  std::vector<std::size_t> events_;
  std::vector<std::uint64_t> last_seq_;
  std::size_t out_of_order_ = 0;
  std::size_t target_;
  std::size_t reached_ = 0;
  std::function<void()> on_all_reached_;
};

}  // namespace

int run_idle(scenario_context& ctx) {
  const auto& o = ctx.opts;
  std::function<void()> stop;
  hold_counter counter(o.sessions, o.hold_events, [&] { stop(); });
  // --tls-port: the sessions are idle over HTTPS (each holds its TLS state in the node).
  std::unique_ptr<tls_sessions> tls;
  auto where = ctx.server;
  if (o.tls_port) {
    tls = std::make_unique<tls_sessions>(o.sessions, o.tls_resume);
    where.port(o.tls_port);
  }
  session_pool pool(ctx.ioc, {where}, o.peer, {subscribe_request(o.peer, ctx.server, o)}, o.sessions,
                    o.connect_window, idle_read_size, o.hold_s ? &counter : nullptr);
  pool.use_tls(tls.get());
  // Someone else's stream or an upstream's: its events are not ours to parse.
  if (o.hold_s || !o.uri.empty()) pool.accept_any_payload();
  boost::asio::steady_timer deadline(ctx.ioc);
  boost::asio::signal_set signals(ctx.ioc);
  std::string failure;
  std::optional<long long> rss_before, rss_after;
  rss_before = rss_bytes(ctx.node_pids);
  const auto started = steady_ns();
  std::int64_t ready_ns = 0;

  stop = [&] {
    deadline.cancel();
    boost::system::error_code ignored;
    signals.cancel(ignored);
    pool.close_all();
  };
  auto hold = [&] {
    std::printf("ready: %zu sessions\n", o.sessions);
    std::fflush(stdout);
    deadline.cancel();
    deadline.expires_after(std::chrono::seconds(o.hold_s));
    deadline.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) stop();
    });
  };
  // From the start, so a hold stopped while sessions still open reports too.
  if (o.hold_s) {
    signals.add(SIGTERM);
    signals.add(SIGINT);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      if (!ready_ns && failure.empty())
        failure = "stopped while opening sessions (" + std::to_string(pool.ready()) + "/" +
                  std::to_string(o.sessions) + " had their hello)";
      stop();
    });
  }
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
        rss_after = rss_bytes(ctx.node_pids);
        o.hold_s ? hold() : stop();
      },
      [&](const std::string& why) {
        if (failure.empty())
          failure = (ready_ns ? "while holding sessions: " : "while opening sessions: ") + why;
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
  if (o.hold_s) {
    const auto held = counter.report();
    j.update(held);
    std::printf("  held              events per session %s..%s, out of order %s\n",
                held["events_min"].dump().c_str(), held["events_max"].dump().c_str(),
                held["out_of_order"].dump().c_str());
  }
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
  if (o.hold_s && j["out_of_order"] != 0) {
    std::cerr << "tidings-load: some session received an event whose seq did not rise\n";
    return 1;
  }
  return 0;
}

}  // namespace tidings::load
