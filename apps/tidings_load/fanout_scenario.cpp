// fanout: N sessions on one stream, E events published by K keep-alive
// publishers as fast as acks come back (or at --rate); every delivery is
// checked and timed. many-streams is the same run over C streams, session s
// on stream s mod C, each event on one stream (publisher_group::stream_of).
// resume publishes the first half, drops every session, publishes the second
// half and reconnects them with Last-Event-ID: the same checks must hold.
// restart kills the node once a third is acknowledged and starts it again;
// publishers resend what was not answered, sessions resume on their own.
// cluster (cluster_scenario.cpp) is fanout with the sessions spread over a
// cluster's nodes. Sessions are read on the main thread, publishers run on
// their own.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string_view>
#include <unordered_map>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "apps/tidings_load/html_report.hpp"
#include "apps/tidings_load/latency_histogram.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/publisher_group.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "apps/tidings_load/session_pool.hpp"
#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

namespace {

namespace net = boost::asio;

// Quiet time after the last expected delivery, for late duplicates.
constexpr std::chrono::milliseconds settle_quiet{200};
// restart: how long publishers and sessions keep trying a node that is down.
constexpr std::chrono::seconds restart_patience{30};
// After the last ack, how long deliveries may still trickle in before the
// missing ones count as lost.
constexpr std::chrono::seconds delivery_grace{10};
// Reads this large let a session that fell behind take many frames at once.
constexpr std::size_t session_read_size = 16384;

struct session_check {
  std::size_t received = 0;  // distinct indexes
  std::size_t duplicates = 0;
  std::size_t out_of_order = 0;
  std::size_t cursor_mismatches = 0;  // events whose cursor differs from another session's
};

// Where the sessions connect: every one to the node, or round the cluster.
std::vector<net::ip::tcp::endpoint> session_servers(const scenario_context& ctx) {
  // --tls-port: sessions read over HTTPS; publishes stay on the plain port.
  if (ctx.opts.tls_port) return {net::ip::tcp::endpoint(ctx.server.address(), ctx.opts.tls_port)};
  if (ctx.session_servers.empty()) return {ctx.server};
  return ctx.session_servers;
}

// Session s sends the (s mod R)-th: one per stream, or on a cluster (one
// stream) one per node, each naming its node in Host.
std::vector<std::string> session_requests(const scenario_context& ctx) {
  if (ctx.session_servers.empty()) return subscribe_requests(ctx.opts.peer, ctx.server, ctx.opts);
  std::vector<std::string> out;
  for (const auto& node : ctx.session_servers)
    out.push_back(subscribe_request(ctx.opts.peer, node, ctx.opts));
  return out;
}

class fanout_run final : public event_sink {
 public:
  fanout_run(scenario_context& ctx, fanout_extension* extension)
      : ctx_(ctx),
        extension_(extension),
        events_(ctx.opts.events),
        pad_(payload_pad(ctx.opts.payload_bytes)),
        tls_(ctx.opts.tls_port ? std::make_unique<tls_sessions>(ctx.opts.sessions, ctx.opts.tls_resume)
                               : nullptr),
        pool_(ctx.ioc, session_servers(ctx), ctx.opts.peer, session_requests(ctx), ctx.opts.sessions,
              ctx.opts.connect_window, session_read_size, this),
        split_(ctx.opts.kind == scenario::resume ? ctx.opts.events / 2 : ctx.opts.events),
        publishers_(ctx.server, ctx.opts, pad_, 0, split_),
        deadline_(ctx.ioc),
        grace_(ctx.ioc),
        sampler_(ctx.ioc),
        checks_(ctx.opts.sessions),
        publisher_last_(ctx.opts.sessions * ctx.opts.streams_per_session * ctx.opts.publishers, -1),
        seen_(ctx.opts.sessions * ctx.opts.events, false),
        cursors_(ctx.opts.events),
        streams_(std::max<std::size_t>(ctx.opts.streams, 1)),
        per_session_(ctx.opts.streams_per_session),
        last_seq_(ctx.opts.sessions * per_session_, 0),
        per_stream_(streams_, 0),
        first_part_per_stream_(streams_, 0) {
    for (std::size_t i = 0; i < events_; ++i) {
      const auto k = publishers_.stream_of(static_cast<std::int64_t>(i));
      ++per_stream_[k];
      if (i < split_) ++first_part_per_stream_[k];
    }
    pool_.use_tls(tls_.get());
    if (ctx.opts.kind == scenario::restart) {
      publishers_.retry_until_acked(restart_patience);
      pool_.reconnect_on_loss(restart_patience);
      publishers_.notify_at(std::max<std::size_t>(events_ / 3, 1), [this] { restart_node(); });
    }
    for (std::size_t k = 0; k < streams_; ++k) stream_names_.push_back(stream_name(ctx.opts, k));
    for (std::size_t k = 0; k < streams_; ++k) stream_index_.emplace(stream_names_[k], k);
    for (std::size_t s = 0; s < ctx.opts.sessions; ++s) {
      expected_total_ += expected(s);
      for (std::size_t j = 0; j < per_session_; ++j)
        first_part_total_ += first_part_per_stream_[(s + j) % streams_];
    }
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
    if (split_ < events_ && !later_) return first_part_acked();
    if (later_) return reconnect();
    all_acked_ = true;
    await_deliveries();
  }

  void await_deliveries() {
    // The last deliveries can overtake the last ack.
    if (all_delivered()) return settle();
    phase_ = "waiting for deliveries";
    arm_grace(distinct_);
  }

  // What is missing counts as lost only after `delivery_grace` with no
  // progress at all: a slow fan-out is not a loss.
  void arm_grace(std::size_t seen) {
    grace_.expires_after(delivery_grace);
    grace_.async_wait([this, seen](const boost::system::error_code& ec) {
      if (ec) return;
      if (distinct_ > seen) return arm_grace(distinct_);
      finish();
    });
  }

  // Everything arrived and was acknowledged: a short quiet time lets a late
  // duplicate (say, a retried request the node stored twice) be counted.
  void settle() {
    if (settling_) return;
    settling_ = true;
    phase_ = "watching for late duplicates";
    grace_.expires_after(settle_quiet);
    grace_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) finish();
    });
  }

  void on_event(std::size_t session, const delivery& d) override {
    ++deliveries_;
    last_delivery_ns_ = d.received_ns;
    count_in_series(d.received_ns);
    latencies_.record(d.received_ns - d.sent_ns);
    auto& c = checks_[session];
    // Acks from concurrent publishers may come back in any order, so across
    // publishers order is checked on the cursor, which is what Tidings
    // promises. Each publisher waits for its ack before sending again, so
    // its own events must also arrive in the order of their indexes; that is
    // the only order nchan can be held to.
    // Which of the session's M streams (nchan's events name none: its one).
    std::size_t k = session % streams_;
    if (!d.stream.empty()) {
      const auto it = stream_index_.find(d.stream);
      k = it == stream_index_.end() ? streams_ : it->second;
    }
    const std::size_t j = (k + streams_ - session % streams_) % streams_;
    if (k >= streams_ || j >= per_session_ || d.index < 0 || static_cast<std::size_t>(d.index) >= events_ ||
        d.publisher < 0 || static_cast<std::size_t>(d.publisher) >= ctx_.opts.publishers ||
        publishers_.stream_of(d.index) != k) {  // not an event of this session's streams
      ++c.out_of_order;
      return;
    }
    if (ctx_.opts.peer == target::tidings) {
      auto& last_seq = last_seq_[session * per_session_ + j];
      if (d.seq <= last_seq) ++c.out_of_order;
      last_seq = std::max(last_seq, d.seq);
      // An event has one cursor wherever it is read: a cluster's relays
      // pass the owner's on, so every node shows the same.
      auto& cursor = cursors_[static_cast<std::size_t>(d.index)];
      if (cursor.empty()) {
        cursor.assign(d.cursor);
      } else if (cursor != d.cursor) {
        ++c.cursor_mismatches;
      }
    }
    auto seen = seen_[session * events_ + static_cast<std::size_t>(d.index)];
    if (seen) {
      ++c.duplicates;
      return;
    }
    seen = true;
    // Numbered per group: resume's two groups may differ in size, never
    // beyond --publishers.
    auto& last = publisher_last_[(session * per_session_ + j) * ctx_.opts.publishers +
                                 static_cast<std::size_t>(d.publisher)];
    if (d.index <= last) ++c.out_of_order;
    last = std::max(last, d.index);
    ++c.received;
    ++distinct_;
    if (all_delivered() && all_acked_) settle();
    if (awaiting_first_part_ && distinct_ == first_part_total_) drop_sessions();
  }

 private:
  void start_publishing() {
    opened_ns_ = steady_ns();
    phase_ = "publishing";
    node_cpu_before_ = cpu_seconds(ctx_.node_pids);
    own_cpu_before_ = own_cpu_seconds();
    if (extension_) extension_->on_publishing();
    first_publish_ns_ = steady_ns();
    if (!ctx_.opts.report_path.empty()) sample_memory();
    publishers_.start(ctx_.ioc, [this](bool ok, const std::string& why) { on_published(ok, why); });
  }

  // restart: SIGKILL in the middle of publishing, then the same port and
  // data directory. Blocks the loop while the node starts; every session is
  // disconnected then anyway.
  void restart_node() {
    if (stopped_ || !ctx_.node) return;
    phase_ = "restarting the node";
    ctx_.node->kill9();
    restarted_at_ns_ = steady_ns();
    try {
      ctx_.node->restart(std::chrono::seconds(20));
    } catch (const std::exception& e) {
      return abort(e.what());
    }
    restart_s_ = static_cast<double>(steady_ns() - restarted_at_ns_) / 1e9;
    phase_ = "publishing after the restart";
  }

  // resume: wait for the first part's deliveries, then drop the sessions.
  void first_part_acked() {
    phase_ = "waiting for the first part's deliveries";
    awaiting_first_part_ = true;
    if (distinct_ == first_part_total_) drop_sessions();
  }

  void drop_sessions() {
    awaiting_first_part_ = false;
    pool_.close_all();
    phase_ = "publishing while the sessions are away";
    later_ = std::make_unique<publisher_group>(ctx_.server, ctx_.opts, pad_, split_, events_);
    later_->start(ctx_.ioc, [this](bool ok, const std::string& why) { on_published(ok, why); });
  }

  // Every session resumes from its own last id; they catch up, then live.
  void reconnect() {
    all_acked_ = true;
    phase_ = "resuming";
    const auto base = session_requests(ctx_);
    std::vector<std::string> resume;
    for (std::size_t s = 0; s < checks_.size(); ++s)
      resume.push_back(with_last_event_id(base[s % base.size()], pool_.last_id(s)));
    reconnect_started_ns_ = steady_ns();
    pool_.reopen(
        std::move(resume),
        [this] {
          reconnect_s_ = static_cast<double>(steady_ns() - reconnect_started_ns_) / 1e9;
          await_deliveries();
        },
        [this](const std::string& why) { abort("while " + phase_ + ": " + why); });
  }

  // --report: deliveries per step of the run, from the first publish.
  void count_in_series(std::int64_t received_ns) {
    const auto step_ns = static_cast<std::int64_t>(series_.step_s * 1e9);
    const auto at = std::max<std::int64_t>(received_ns - first_publish_ns_, 0) / step_ns;
    if (series_.deliveries.size() <= static_cast<std::size_t>(at)) series_.deliveries.resize(at + 1, 0);
    ++series_.deliveries[static_cast<std::size_t>(at)];
  }

  void sample_memory() {
    if (ctx_.node_pids.empty()) return;
    // After a restart the node is another process (and none while it is down).
    const auto pids = ctx_.node ? std::vector<pid_t>{ctx_.node->pid()} : ctx_.node_pids;
    if (const auto rss = pids.front() > 0 ? rss_bytes(pids) : std::nullopt)
      series_.node_rss_mib.push_back(static_cast<double>(*rss) / 1048576.0);
    sampler_.expires_after(std::chrono::milliseconds(static_cast<int>(series_.step_s * 1000)));
    sampler_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !stopped_) sample_memory();
    });
  }

  // Events of the session's streams s mod C, ..., s mod C + M - 1 (mod C).
  std::size_t expected(std::size_t session) const {
    std::size_t n = 0;
    for (std::size_t j = 0; j < per_session_; ++j) n += per_stream_[(session + j) % streams_];
    return n;
  }
  bool all_delivered() const { return distinct_ == expected_total_; }

  void finish() {
    if (stopped_) return;
    // Another process after a restart: its CPU is not the run's.
    node_cpu_after_ = !restarted_at_ns_ ? cpu_seconds(ctx_.node_pids) : std::nullopt;
    own_cpu_after_ = own_cpu_seconds();
    if (extension_) extension_->on_finished();
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
    sampler_.cancel();
    publishers_.stop();
    if (later_) later_->stop();
    pool_.close_all();
  }

  std::string progress() const {
    return std::to_string(pool_.ready()) + "/" + std::to_string(pool_.size()) + " sessions ready, " +
           std::to_string(publishers_.acks() + (later_ ? later_->acks() : 0)) + "/" +
           std::to_string(events_) + " acked, " + std::to_string(distinct_) + "/" +
           std::to_string(expected_total_) + " delivered";
  }

  int report() {
    std::size_t lost = 0, dupes = 0, disorder = 0, mismatches = 0;
    for (std::size_t s = 0; s < checks_.size(); ++s) {
      const auto& c = checks_[s];
      lost += expected(s) - c.received;
      dupes += c.duplicates;
      disorder += c.out_of_order;
      mismatches += c.cursor_mismatches;
    }
    const double deliver_s = static_cast<double>(last_delivery_ns_ - first_publish_ns_) / 1e9;
    const std::size_t acks = publishers_.acks() + (later_ ? later_->acks() : 0);
    const auto last_ack_ns = later_ ? later_->last_ack_ns() : publishers_.last_ack_ns();
    const double publish_s = static_cast<double>(last_ack_ns - first_publish_ns_) / 1e9;
    const double open_s = static_cast<double>(opened_ns_ - open_started_ns_) / 1e9;
    const double rate = deliver_s > 0 ? static_cast<double>(deliveries_) / deliver_s : 0;
    const double ack_rate = publish_s > 0 ? static_cast<double>(acks) / publish_s : 0;
    const auto lat = latencies_.summary();
    auto ack_hist = publishers_.ack_latencies();
    if (later_) ack_hist.merge(later_->ack_latencies());
    const auto ack = ack_hist.summary();
    const double own_cpu = own_cpu_after_ - own_cpu_before_;
    std::optional<double> node_cpu;
    if (node_cpu_before_ && node_cpu_after_) node_cpu = *node_cpu_after_ - *node_cpu_before_;
    auto per_delivery_us = [&](double cpu) {
      return deliveries_ ? cpu * 1e6 / static_cast<double>(deliveries_) : 0.0;
    };

    const auto& o = ctx_.opts;
    const char* name = o.kind == scenario::many_streams ? "many-streams"
                       : o.kind == scenario::resume     ? "resume"
                       : o.kind == scenario::restart    ? "restart"
                       : o.kind == scenario::cluster    ? "cluster"
                                                        : "fanout";
    // A cluster's CPU is its nodes' together.
    const bool cluster = !ctx_.session_servers.empty();
    const char* node_label = cluster ? "nodes" : "node";
    std::printf("%s (%s): %zu sessions on %zu stream(s), %zu events, %zu-byte payload, %zu publishers", name,
                target_name(o.peer), o.sessions, streams_, o.events, o.payload_bytes, publishers_.count());
    if (cluster) std::printf(" over %zu nodes", ctx_.session_servers.size());
    if (per_session_ > 1) std::printf(", %zu streams per session", per_session_);
    if (o.batch > 1) std::printf(", %zu per request", o.batch);
    if (o.rate > 0) std::printf(", offered %.0f /s", o.rate);
    std::printf("\n");
    std::printf("  sessions opened   %.3f s\n", open_s);
    std::printf("  deliveries        %zu in %.3f s = %.0f /s\n", deliveries_, deliver_s, rate);
    std::printf("  latency (ms)      p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", lat.p50_ms,
                lat.p90_ms, lat.p99_ms, lat.p999_ms, lat.max_ms);
    std::printf("  publish acks      %zu in %.3f s = %.0f /s (ack ms p50 %.3f p99 %.3f)\n", acks, publish_s,
                ack_rate, ack.p50_ms, ack.p99_ms);
    if (node_cpu) {
      std::printf("  cpu (s)           %s %.2f (%.2f us/delivery)  client %.2f (%.2f us/delivery)\n",
                  node_label, *node_cpu, per_delivery_us(*node_cpu), own_cpu, per_delivery_us(own_cpu));
    } else {
      std::printf("  cpu (s)           %s n/a (%s)  client %.2f (%.2f us/delivery)\n", node_label,
                  cluster ? "known for nodes tidings-load starts" : "give --pid", own_cpu,
                  per_delivery_us(own_cpu));
    }
    if (reconnect_started_ns_)
      std::printf("  reconnected       %zu sessions in %.3f s = %.0f /s\n", o.sessions, reconnect_s_,
                  reconnect_s_ > 0 ? static_cast<double>(o.sessions) / reconnect_s_ : 0.0);
    if (tls_)
      std::printf("  tls handshakes    %zu full, %zu resumed (--tls-resume %s)\n", tls_->full(),
                  tls_->resumed(), o.tls_resume ? "on" : "off");
    std::printf("  correctness       lost %zu, duplicates %zu, out of order %zu, cursor mismatches %zu\n",
                lost, dupes, disorder, mismatches);

    nlohmann::json j = {
        {"scenario", name},
        {"streams", streams_},
        {"streams_per_session", per_session_},
        {"batch", o.batch},
        {"offered_rate", o.rate > 0 ? nlohmann::json(o.rate) : nlohmann::json()},
        {"restart_s", restarted_at_ns_ ? nlohmann::json(restart_s_) : nlohmann::json()},
        {"session_reconnects", pool_.reconnects()},
        {"reconnect_s", reconnect_started_ns_ ? nlohmann::json(reconnect_s_) : nlohmann::json()},
        {"reconnects_per_s", reconnect_started_ns_ && reconnect_s_ > 0
                                 ? nlohmann::json(static_cast<double>(o.sessions) / reconnect_s_)
                                 : nlohmann::json()},
        {"tls", tls_ ? nlohmann::json({{"full_handshakes", tls_->full()},
                                       {"resumed", tls_->resumed()},
                                       {"resume", o.tls_resume}})
                     : nlohmann::json()},
        {"target", target_name(o.peer)},
        {"sessions", o.sessions},
        {"events", o.events},
        {"payload_bytes", o.payload_bytes},
        {"publishers", publishers_.count()},
        {"open_s", open_s},
        {"deliveries", deliveries_},
        {"delivery_s", deliver_s},
        {"deliveries_per_s", rate},
        {"latency_ms",
         {{"p50", lat.p50_ms},
          {"p90", lat.p90_ms},
          {"p99", lat.p99_ms},
          {"p99.9", lat.p999_ms},
          {"max", lat.max_ms}}},
        {"latency_samples", lat.count},
        {"acks", acks},
        {"acks_per_s", ack_rate},
        {"ack_latency_ms", {{"p50", ack.p50_ms}, {"p99", ack.p99_ms}, {"max", ack.max_ms}}},
        {"node_cpu_s", node_cpu ? nlohmann::json(*node_cpu) : nlohmann::json()},
        {"client_cpu_s", own_cpu},
        {"lost", lost},
        {"duplicates", dupes},
        {"out_of_order", disorder},
        {"cursor_mismatches", mismatches},
    };
    const std::string extension_failure = extension_ ? extension_->report(j) : "";
    std::printf("%s\n", j.dump().c_str());
    if (!o.report_path.empty()) {
      try {
        write_html_report(o.report_path, j, latencies_, series_);
        std::printf("  report            %s\n", o.report_path.c_str());
      } catch (const std::exception& e) {
        std::cerr << "tidings-load: " << e.what() << "\n";
        return 1;
      }
    }
    std::fflush(stdout);
    if (lost || dupes || disorder || mismatches) {
      std::cerr << "tidings-load: FAILED: " << lost << " lost, " << dupes << " duplicated, " << disorder
                << " out of order, " << mismatches << " with another cursor than elsewhere\n";
      return 1;
    }
    if (!extension_failure.empty()) {
      std::cerr << "tidings-load: FAILED: " << extension_failure << "\n";
      return 1;
    }
    return 0;
  }

  scenario_context& ctx_;
  fanout_extension* extension_;  // may be null
  std::size_t events_;
  std::string pad_;                    // before publishers_, which keeps a reference
  std::unique_ptr<tls_sessions> tls_;  // --tls-port; before pool_, whose sessions use it
  session_pool pool_;
  std::size_t split_;                      // events before the drop (all but for resume)
  std::int64_t reconnect_started_ns_ = 0;  // resume: when the sessions began to reconnect
  double reconnect_s_ = 0;                 // resume: until every one had its hello again
  publisher_group publishers_;
  net::steady_timer deadline_;
  net::steady_timer grace_;
  net::steady_timer sampler_;  // --report: the node's memory every step
  run_series series_;
  std::string phase_;
  std::string failure_;
  bool stopped_ = false;

  std::vector<session_check> checks_;
  std::vector<std::int64_t> publisher_last_;  // [session][publisher]: last index seen
  std::vector<bool> seen_;                    // session-major bitmap of delivered indexes
  std::vector<std::string> cursors_;          // per event index: the cursor it was first seen with
  latency_histogram latencies_;
  std::size_t streams_;
  std::size_t per_session_;              // streams each session reads
  std::vector<std::uint64_t> last_seq_;  // [session][j]: Tidings' cursor order per stream
  std::vector<std::string> stream_names_;
  std::unordered_map<std::string_view, std::size_t> stream_index_;  // views into stream_names_
  std::vector<std::size_t> per_stream_;                             // events each stream gets
  std::size_t expected_total_ = 0;                                  // deliveries a lossless run makes
  std::vector<std::size_t> first_part_per_stream_;                  // resume: before the drop
  std::size_t first_part_total_ = 0;
  bool awaiting_first_part_ = false;
  bool settling_ = false;
  std::int64_t restarted_at_ns_ = 0;        // restart: when the node was killed
  double restart_s_ = 0;                    // how long it took to listen again
  std::unique_ptr<publisher_group> later_;  // resume: the events published while away
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

int run_fanout(scenario_context& ctx, fanout_extension* extension) {
  // Large vectors inside: keep it off the stack.
  auto run = std::make_unique<fanout_run>(ctx, extension);
  return run->run();
}

}  // namespace tidings::load
