// fanout: N sessions on one stream, E events published by K keep-alive
// publishers as fast as acks come back; every delivery is checked and timed.
// Sessions are read on the main thread, publishers run on their own.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "apps/tidings_load/latency_summary.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/publisher_group.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "apps/tidings_load/session_pool.hpp"
#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

namespace {

namespace net = boost::asio;

// After the last ack, how long deliveries may still trickle in before the
// missing ones count as lost.
constexpr std::chrono::seconds delivery_grace{10};
// Reads this large let a session that fell behind take many frames at once.
constexpr std::size_t session_read_size = 16384;
// Latency samples kept at most (about 32 MB); beyond that only every k-th
// session's deliveries are timed, which still covers every event.
constexpr std::size_t max_latency_samples = std::size_t{1} << 22;

struct session_check {
  std::uint64_t last_seq = 0;  // Tidings only: nchan's ids are not our cursors
  std::size_t received = 0;    // distinct indexes
  std::size_t duplicates = 0;
  std::size_t out_of_order = 0;
};

std::string make_pad(std::size_t payload_bytes) {
  // Sized so the whole payload object is about --payload-bytes long.
  const std::size_t fixed = 49;
  return std::string(payload_bytes > fixed ? payload_bytes - fixed : 0, 'x');
}

class fanout_run final : public event_sink {
 public:
  explicit fanout_run(scenario_context& ctx)
      : ctx_(ctx),
        events_(ctx.opts.events),
        pad_(make_pad(ctx.opts.payload_bytes)),
        pool_(ctx.ioc, ctx.server, ctx.opts.peer, subscribe_request(ctx.opts.peer, ctx.server, ctx.opts),
              ctx.opts.sessions, ctx.opts.connect_window, session_read_size, this),
        publishers_(ctx.server, ctx.opts, pad_),
        deadline_(ctx.ioc),
        grace_(ctx.ioc),
        checks_(ctx.opts.sessions),
        publisher_last_(ctx.opts.sessions * publishers_.count(), -1),
        seen_(ctx.opts.sessions * ctx.opts.events, false) {
    const std::size_t total = ctx.opts.sessions * ctx.opts.events;
    sample_stride_ = (total + max_latency_samples - 1) / max_latency_samples;
    latencies_.reserve(std::min(total, max_latency_samples));
  }

  int run() {
    deadline_.expires_after(std::chrono::seconds(ctx_.opts.timeout_s));
    deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) abort("timed out while " + phase_ + " (" + progress() + ")");
    });
    phase_ = "opening sessions";
    open_started_ns_ = steady_ns();
    pool_.open([this] { start_publishing(); },
               [this](const std::string& why) { abort("while " + phase_ + ": " + why); });
    ctx_.ioc.run();
    ctx_.ioc.restart();
    if (!failure_.empty()) {
      std::cerr << "tidings-load: " << failure_ << "\n";
      return 1;
    }
    return report();
  }

  // On the main thread, once every event is acked (or publishing failed).
  void on_published(bool ok, const std::string& why) {
    if (stopped_) return;
    if (!ok) return abort("publishing: " + why);
    all_acked_ = true;
    // The last deliveries can overtake the last ack.
    if (all_delivered()) return finish();
    phase_ = "waiting for deliveries";
    grace_.expires_after(delivery_grace);
    grace_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) finish();  // what is missing now counts as lost
    });
  }

  void on_event(std::size_t session, const delivery& d) override {
    ++deliveries_;
    last_delivery_ns_ = d.received_ns;
    if (session % sample_stride_ == 0) latencies_.push_back(d.received_ns - d.sent_ns);
    auto& c = checks_[session];
    // Acks from concurrent publishers may come back in any order, so across
    // publishers order is checked on the cursor, which is what Tidings
    // promises. Each publisher waits for its ack before sending again, so
    // its own events must also arrive in the order of their indexes; that is
    // the only order nchan can be held to.
    if (ctx_.opts.peer == target::tidings) {
      if (d.seq <= c.last_seq) ++c.out_of_order;
      c.last_seq = std::max(c.last_seq, d.seq);
    }
    if (d.index < 0 || static_cast<std::size_t>(d.index) >= events_ || d.publisher < 0 ||
        static_cast<std::size_t>(d.publisher) >= publishers_.count()) {
      ++c.out_of_order;
      return;
    }
    auto seen = seen_[session * events_ + static_cast<std::size_t>(d.index)];
    if (seen) {
      ++c.duplicates;
      return;
    }
    seen = true;
    auto& last = publisher_last_[session * publishers_.count() + static_cast<std::size_t>(d.publisher)];
    if (d.index <= last) ++c.out_of_order;
    last = std::max(last, d.index);
    ++c.received;
    ++distinct_;
    if (all_delivered() && all_acked_) finish();
  }

 private:
  void start_publishing() {
    opened_ns_ = steady_ns();
    phase_ = "publishing";
    node_cpu_before_ = ctx_.node_pid ? cpu_seconds(*ctx_.node_pid) : std::nullopt;
    own_cpu_before_ = own_cpu_seconds();
    first_publish_ns_ = steady_ns();
    publishers_.start(ctx_.ioc, [this](bool ok, const std::string& why) { on_published(ok, why); });
  }

  bool all_delivered() const { return distinct_ == events_ * checks_.size(); }

  void finish() {
    if (stopped_) return;
    node_cpu_after_ = ctx_.node_pid ? cpu_seconds(*ctx_.node_pid) : std::nullopt;
    own_cpu_after_ = own_cpu_seconds();
    stop();
  }

  void abort(const std::string& why) {
    if (stopped_) return;
    failure_ = why;
    stop();
  }

  // Closing every socket and timer lets ioc.run() return on its own.
  void stop() {
    stopped_ = true;
    deadline_.cancel();
    grace_.cancel();
    publishers_.stop();
    pool_.close_all();
  }

  std::string progress() const {
    return std::to_string(pool_.ready()) + "/" + std::to_string(pool_.size()) + " sessions ready, " +
           std::to_string(publishers_.acks()) + "/" + std::to_string(events_) + " acked, " +
           std::to_string(distinct_) + "/" + std::to_string(events_ * checks_.size()) + " delivered";
  }

  int report() {
    std::size_t lost = 0, dupes = 0, disorder = 0;
    for (const auto& c : checks_) {
      lost += events_ - c.received;
      dupes += c.duplicates;
      disorder += c.out_of_order;
    }
    const double deliver_s = static_cast<double>(last_delivery_ns_ - first_publish_ns_) / 1e9;
    const std::size_t acks = publishers_.acks();
    const double publish_s = static_cast<double>(publishers_.last_ack_ns() - first_publish_ns_) / 1e9;
    const double open_s = static_cast<double>(opened_ns_ - open_started_ns_) / 1e9;
    const double rate = deliver_s > 0 ? static_cast<double>(deliveries_) / deliver_s : 0;
    const double ack_rate = publish_s > 0 ? static_cast<double>(acks) / publish_s : 0;
    const auto lat = summarize(latencies_);
    const auto ack = summarize(publishers_.ack_latencies());
    const double own_cpu = own_cpu_after_ - own_cpu_before_;
    std::optional<double> node_cpu;
    if (node_cpu_before_ && node_cpu_after_) node_cpu = *node_cpu_after_ - *node_cpu_before_;
    auto per_delivery_us = [&](double cpu) {
      return deliveries_ ? cpu * 1e6 / static_cast<double>(deliveries_) : 0.0;
    };

    const auto& o = ctx_.opts;
    std::printf("fanout (%s): %zu sessions x %zu events, %zu-byte payload, %zu publishers\n",
                target_name(o.peer), o.sessions, o.events, o.payload_bytes, publishers_.count());
    std::printf("  sessions opened   %.3f s\n", open_s);
    std::printf("  deliveries        %zu in %.3f s = %.0f /s\n", deliveries_, deliver_s, rate);
    std::printf("  latency (ms)      p50 %.3f  p99 %.3f  max %.3f\n", lat.p50_ms, lat.p99_ms, lat.max_ms);
    std::printf("  publish acks      %zu in %.3f s = %.0f /s (ack ms p50 %.3f p99 %.3f)\n", acks, publish_s,
                ack_rate, ack.p50_ms, ack.p99_ms);
    if (node_cpu) {
      std::printf("  cpu (s)           node %.2f (%.2f us/delivery)  client %.2f (%.2f us/delivery)\n",
                  *node_cpu, per_delivery_us(*node_cpu), own_cpu, per_delivery_us(own_cpu));
    } else {
      std::printf("  cpu (s)           node n/a (give --pid)  client %.2f (%.2f us/delivery)\n", own_cpu,
                  per_delivery_us(own_cpu));
    }
    std::printf("  correctness       lost %zu, duplicates %zu, out of order %zu\n", lost, dupes, disorder);

    nlohmann::json j = {
        {"scenario", "fanout"},
        {"target", target_name(o.peer)},
        {"sessions", o.sessions},
        {"events", o.events},
        {"payload_bytes", o.payload_bytes},
        {"publishers", publishers_.count()},
        {"open_s", open_s},
        {"deliveries", deliveries_},
        {"delivery_s", deliver_s},
        {"deliveries_per_s", rate},
        {"latency_ms", {{"p50", lat.p50_ms}, {"p99", lat.p99_ms}, {"max", lat.max_ms}}},
        {"latency_samples", lat.count},
        {"acks", acks},
        {"acks_per_s", ack_rate},
        {"ack_latency_ms", {{"p50", ack.p50_ms}, {"p99", ack.p99_ms}}},
        {"node_cpu_s", node_cpu ? nlohmann::json(*node_cpu) : nlohmann::json()},
        {"client_cpu_s", own_cpu},
        {"lost", lost},
        {"duplicates", dupes},
        {"out_of_order", disorder},
    };
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
    if (lost || dupes || disorder) {
      std::cerr << "tidings-load: FAILED: " << lost << " lost, " << dupes << " duplicated, " << disorder
                << " out of order\n";
      return 1;
    }
    return 0;
  }

  scenario_context& ctx_;
  std::size_t events_;
  std::string pad_;  // before publishers_, which keeps a reference
  session_pool pool_;
  publisher_group publishers_;
  net::steady_timer deadline_;
  net::steady_timer grace_;
  std::string phase_;
  std::string failure_;
  bool stopped_ = false;

  std::vector<session_check> checks_;
  std::vector<std::int64_t> publisher_last_;  // [session][publisher]: last index seen
  std::vector<bool> seen_;                    // session-major bitmap of delivered indexes
  std::size_t sample_stride_ = 1;
  std::vector<std::int64_t> latencies_;
  bool all_acked_ = false;
  std::size_t deliveries_ = 0;
  std::size_t distinct_ = 0;

  std::int64_t open_started_ns_ = 0;
  std::int64_t opened_ns_ = 0;
  std::int64_t first_publish_ns_ = 0;
  std::int64_t last_delivery_ns_ = 0;
  std::optional<double> node_cpu_before_, node_cpu_after_;
  double own_cpu_before_ = 0, own_cpu_after_ = 0;
};

}  // namespace

int run_fanout(scenario_context& ctx) {
  // Large vectors inside: keep it off the stack.
  auto run = std::make_unique<fanout_run>(ctx);
  return run->run();
}

}  // namespace tidings::load
