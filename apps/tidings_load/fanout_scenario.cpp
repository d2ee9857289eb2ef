// fanout: N sessions on one stream, E events published by K keep-alive
// publishers as fast as acks come back; every delivery is checked and timed.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "apps/tidings_load/latency_summary.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/publisher.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "apps/tidings_load/session_pool.hpp"

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
  std::uint64_t last_seq = 0;
  std::size_t received = 0;  // distinct indexes
  std::size_t duplicates = 0;
  std::size_t out_of_order = 0;
};

class fanout_run final : public event_sink, public publish_source {
 public:
  explicit fanout_run(scenario_context& ctx)
      : ctx_(ctx),
        events_(ctx.opts.events),
        pool_(ctx.ioc, ctx.server, ctx.opts.stream, ctx.opts.sessions, ctx.opts.connect_window,
              session_read_size, this),
        deadline_(ctx.ioc),
        grace_(ctx.ioc),
        checks_(ctx.opts.sessions),
        seen_(ctx.opts.sessions * ctx.opts.events, false) {
    // Sized so the whole event's data object is about --payload-bytes long.
    const std::size_t fixed = 40;
    pad_.assign(ctx.opts.payload_bytes > fixed ? ctx.opts.payload_bytes - fixed : 0, 'x');
    const std::size_t total = ctx.opts.sessions * ctx.opts.events;
    sample_stride_ = (total + max_latency_samples - 1) / max_latency_samples;
    latencies_.reserve(std::min(total, max_latency_samples));
    ack_latencies_.reserve(events_);
  }

  int run() {
    deadline_.expires_after(std::chrono::seconds(ctx_.opts.timeout_s));
    deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) abort("timed out while " + phase_ + " (" + progress() + ")");
    });
    phase_ = "opening sessions";
    open_started_ns_ = steady_ns();
    pool_.open([this] { start_publishing(); }, [this](const std::string& why) {
      abort("while " + phase_ + ": " + why);
    });
    ctx_.ioc.run();
    ctx_.ioc.restart();
    if (!failure_.empty()) {
      std::cerr << "tidings-load: " << failure_ << "\n";
      return 1;
    }
    return report();
  }

  bool next_index(std::int64_t& index) override {
    if (next_ >= events_) return false;
    index = static_cast<std::int64_t>(next_++);
    return true;
  }

  void on_ack(std::int64_t, std::int64_t sent_ns, std::int64_t acked_ns) override {
    ack_latencies_.push_back(acked_ns - sent_ns);
    last_ack_ns_ = acked_ns;
    if (++acks_ == events_) {
      // The last deliveries can overtake the last ack.
      if (all_delivered()) return finish();
      phase_ = "waiting for deliveries";
      grace_.expires_after(delivery_grace);
      grace_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) finish();  // what is missing now counts as lost
      });
    }
  }

  void on_publish_failure(const std::string& why) override { abort("publishing: " + why); }

  void on_event(std::size_t session, std::uint64_t seq, std::int64_t sent_ns, std::int64_t index,
                std::int64_t received_ns) override {
    ++deliveries_;
    last_delivery_ns_ = received_ns;
    if (session % sample_stride_ == 0) latencies_.push_back(received_ns - sent_ns);
    auto& c = checks_[session];
    // Acks from concurrent publishers may come back in any order, so order
    // is checked on the cursor, which is what the broker promises.
    if (seq <= c.last_seq) ++c.out_of_order;
    c.last_seq = std::max(c.last_seq, seq);
    if (index < 0 || static_cast<std::size_t>(index) >= events_) {
      ++c.out_of_order;
      return;
    }
    auto seen = seen_[session * events_ + static_cast<std::size_t>(index)];
    if (seen) {
      ++c.duplicates;
      return;
    }
    seen = true;
    ++c.received;
    ++distinct_;
    if (all_delivered() && acks_ == events_) finish();
  }

 private:
  void start_publishing() {
    opened_ns_ = steady_ns();
    phase_ = "publishing";
    node_cpu_before_ = ctx_.node_pid ? cpu_seconds(*ctx_.node_pid) : std::nullopt;
    own_cpu_before_ = own_cpu_seconds();
    first_publish_ns_ = steady_ns();
    const auto k = std::min(ctx_.opts.publishers, events_);
    for (std::size_t i = 0; i < k; ++i) {
      publishers_.push_back(
          std::make_unique<publisher>(ctx_.ioc, ctx_.server, ctx_.opts.stream, pad_, *this));
      publishers_.back()->start();
    }
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
    for (auto& p : publishers_) p->close();
    pool_.close_all();
  }

  std::string progress() const {
    return std::to_string(pool_.ready()) + "/" + std::to_string(pool_.size()) +
           " sessions ready, " + std::to_string(acks_) + "/" + std::to_string(events_) +
           " acked, " + std::to_string(distinct_) + "/" +
           std::to_string(events_ * checks_.size()) + " delivered";
  }

  int report() {
    std::size_t lost = 0, dupes = 0, disorder = 0;
    for (const auto& c : checks_) {
      lost += events_ - c.received;
      dupes += c.duplicates;
      disorder += c.out_of_order;
    }
    const double deliver_s = static_cast<double>(last_delivery_ns_ - first_publish_ns_) / 1e9;
    const double publish_s = static_cast<double>(last_ack_ns_ - first_publish_ns_) / 1e9;
    const double open_s = static_cast<double>(opened_ns_ - open_started_ns_) / 1e9;
    const double rate = deliver_s > 0 ? static_cast<double>(deliveries_) / deliver_s : 0;
    const double ack_rate = publish_s > 0 ? static_cast<double>(acks_) / publish_s : 0;
    const auto lat = summarize(latencies_);
    const auto ack = summarize(ack_latencies_);
    const double own_cpu = own_cpu_after_ - own_cpu_before_;
    std::optional<double> node_cpu;
    if (node_cpu_before_ && node_cpu_after_) node_cpu = *node_cpu_after_ - *node_cpu_before_;
    auto per_delivery_us = [&](double cpu) {
      return deliveries_ ? cpu * 1e6 / static_cast<double>(deliveries_) : 0.0;
    };

    const auto& o = ctx_.opts;
    std::printf("fanout: %zu sessions x %zu events, %zu-byte payload, %zu publishers\n",
                o.sessions, o.events, o.payload_bytes, std::min(o.publishers, events_));
    std::printf("  sessions opened   %.3f s\n", open_s);
    std::printf("  deliveries        %zu in %.3f s = %.0f /s\n", deliveries_, deliver_s, rate);
    std::printf("  latency (ms)      p50 %.3f  p99 %.3f  max %.3f\n", lat.p50_ms, lat.p99_ms,
                lat.max_ms);
    std::printf("  publish acks      %zu in %.3f s = %.0f /s (ack ms p50 %.3f p99 %.3f)\n", acks_,
                publish_s, ack_rate, ack.p50_ms, ack.p99_ms);
    if (node_cpu) {
      std::printf("  cpu (s)           node %.2f (%.2f us/delivery)  client %.2f (%.2f us/delivery)\n",
                  *node_cpu, per_delivery_us(*node_cpu), own_cpu, per_delivery_us(own_cpu));
    } else {
      std::printf("  cpu (s)           node n/a (give --pid)  client %.2f (%.2f us/delivery)\n",
                  own_cpu, per_delivery_us(own_cpu));
    }
    std::printf("  correctness       lost %zu, duplicates %zu, out of order %zu\n", lost, dupes,
                disorder);

    nlohmann::json j = {
        {"scenario", "fanout"},
        {"sessions", o.sessions},
        {"events", o.events},
        {"payload_bytes", o.payload_bytes},
        {"publishers", std::min(o.publishers, events_)},
        {"open_s", open_s},
        {"deliveries", deliveries_},
        {"delivery_s", deliver_s},
        {"deliveries_per_s", rate},
        {"latency_ms", {{"p50", lat.p50_ms}, {"p99", lat.p99_ms}, {"max", lat.max_ms}}},
        {"latency_samples", lat.count},
        {"acks", acks_},
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
      std::cerr << "tidings-load: FAILED: " << lost << " lost, " << dupes << " duplicated, "
                << disorder << " out of order\n";
      return 1;
    }
    return 0;
  }

  scenario_context& ctx_;
  std::size_t events_;
  session_pool pool_;
  net::steady_timer deadline_;
  net::steady_timer grace_;
  std::vector<std::unique_ptr<publisher>> publishers_;
  std::string pad_;
  std::string phase_;
  std::string failure_;
  bool stopped_ = false;

  std::vector<session_check> checks_;
  std::vector<bool> seen_;  // session-major bitmap of delivered indexes
  std::size_t sample_stride_ = 1;
  std::vector<std::int64_t> latencies_;
  std::vector<std::int64_t> ack_latencies_;
  std::size_t next_ = 0;
  std::size_t acks_ = 0;
  std::size_t deliveries_ = 0;
  std::size_t distinct_ = 0;

  std::int64_t open_started_ns_ = 0;
  std::int64_t opened_ns_ = 0;
  std::int64_t first_publish_ns_ = 0;
  std::int64_t last_ack_ns_ = 0;
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
