// publish: the durable publish path alone. K keep-alive publishers send E
// events, B per request, over C streams, as fast as acks come back (or at
// --rate); no session reads them. Figures: events and requests
// acknowledged per second, ack latency, and the CPU node and client spent
// per event.
//
// Against Tidings every stream is then read back over HTTP: its head must
// have moved by exactly the events acknowledged for it (nothing lost,
// nothing extra), and what it retains of them must be each event once,
// every publisher's in the order it sent them, under contiguous cursors.
// nchan keeps no log to read back; its run checks acknowledgements only.

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "apps/tidings_load/history_reader.hpp"
#include "apps/tidings_load/latency_histogram.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/publisher_group.hpp"
#include "apps/tidings_load/scenario_context.hpp"
#include "apps/tidings_load/sse_session.hpp"
#include "apps/tidings_load/target_requests.hpp"
#include "client/http_client.hpp"

namespace tidings::load {

namespace {

namespace net = boost::asio;
using json = nlohmann::json;

class publish_run {
 public:
  explicit publish_run(scenario_context& ctx)
      : ctx_(ctx),
        pad_(payload_pad(ctx.opts.payload_bytes)),
        publishers_(ctx.server, ctx.opts, pad_),
        deadline_(ctx.ioc),
        streams_(std::max<std::size_t>(ctx.opts.streams, 1)),
        per_stream_(streams_, 0) {
    for (std::size_t i = 0; i < ctx.opts.events; ++i)
      ++per_stream_[publishers_.stream_of(static_cast<std::int64_t>(i))];
  }

  int run() {
    const auto& o = ctx_.opts;
    const bool tidings = o.peer == target::tidings;
    try {
      if (tidings) {
        stream_reader reader({ctx_.server.address().to_string(), ctx_.server.port()}, o.token);
        for (std::size_t k = 0; k < streams_; ++k) heads_before_.push_back(reader.head(stream_name(o, k)));
      }
    } catch (const std::exception& e) {
      std::cerr << "tidings-load: reading the streams before the run: " << e.what() << "\n";
      return 1;
    }

    deadline_.expires_after(std::chrono::seconds(o.timeout_s));
    deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      failure_ = "timed out after " + std::to_string(ctx_.opts.timeout_s) + " s with " +
                 std::to_string(publishers_.acks()) + "/" + std::to_string(ctx_.opts.events) +
                 " acknowledged";
      publishers_.stop();
    });
    node_cpu_before_ = cpu_seconds(ctx_.node_pids);
    own_cpu_before_ = own_cpu_seconds();
    first_publish_ns_ = steady_ns();
    publishers_.start(ctx_.ioc, [this](bool ok, const std::string& why) {
      if (!ok) failure_ = "publishing: " + why;
      node_cpu_after_ = cpu_seconds(ctx_.node_pids);
      own_cpu_after_ = own_cpu_seconds();
      deadline_.cancel();
      publishers_.stop();
    });
    ctx_.ioc.run();
    if (!failure_.empty()) {
      std::cerr << "tidings-load: FAILED: " << failure_ << "\n";
      return 1;
    }
    std::string stored;
    if (tidings) {
      try {
        stored = verify_stored();
      } catch (const std::exception& e) {
        failure_ = std::string("reading the streams back: ") + e.what();
      }
    } else {
      stored = "not read back (nchan keeps no log)";
    }
    return report(stored);
  }

 private:
  // What failure_ says when the stored events are not the acknowledged
  // ones; otherwise a line on what was checked.
  std::string verify_stored() {
    const auto& o = ctx_.opts;
    stream_reader reader({ctx_.server.address().to_string(), ctx_.server.port()}, o.token);
    std::size_t read_back = 0;
    for (std::size_t k = 0; k < streams_; ++k) {
      const auto name = stream_name(o, k);
      const auto& before = heads_before_[k];
      const auto after = reader.head(name);
      if (!before.epoch.empty() && after.epoch != before.epoch) {
        failure_ = name + ": its epoch changed during the run (" + before.epoch + " -> " + after.epoch + ")";
        return {};
      }
      if (after.seq - before.seq != per_stream_[k]) {
        failure_ = name + ": its head moved by " + std::to_string(after.seq - before.seq) + ", but " +
                   std::to_string(per_stream_[k]) + " events were acknowledged";
        return {};
      }
      const auto events = reader.events_after(name, before.seq);
      if (auto why = check_events(k, events, after.seq); !why.empty()) {
        failure_ = name + ": " + why;
        return {};
      }
      read_back += events.size();
    }
    return "heads moved by exactly the " + std::to_string(o.events) + " acknowledged; " +
           std::to_string(read_back) + " retained read back, each once, in order, contiguous cursors";
  }

  // The retained tail of stream k's run: seqs contiguous up to the head,
  // each index of this stream at most once, each publisher's rising.
  std::string check_events(std::size_t k, const std::vector<std::pair<std::uint64_t, json>>& events,
                           std::uint64_t head) {
    if (events.empty()) return per_stream_[k] ? "no event of the run is retained" : "";
    if (events.back().first != head) return "the last event read is not the head";
    std::vector<bool> seen(ctx_.opts.events, false);
    std::vector<std::int64_t> last_of(ctx_.opts.publishers, -1);
    for (std::size_t n = 0; n < events.size(); ++n) {
      const auto& [seq, data] = events[n];
      if (n > 0 && seq != events[n - 1].first + 1)
        return "cursors jump from seq " + std::to_string(events[n - 1].first) + " to " + std::to_string(seq);
      const auto i = data.is_object() ? data.value("i", std::int64_t{-1}) : -1;
      const auto p = data.is_object() ? data.value("p", std::int64_t{-1}) : -1;
      if (i < 0 || static_cast<std::size_t>(i) >= seen.size() || publishers_.stream_of(i) != k || p < 0 ||
          static_cast<std::size_t>(p) >= last_of.size())
        return "seq " + std::to_string(seq) + " holds an event this run did not publish here: " + data.dump();
      if (seen[static_cast<std::size_t>(i)]) return "event " + std::to_string(i) + " is stored twice";
      seen[static_cast<std::size_t>(i)] = true;
      if (i <= last_of[static_cast<std::size_t>(p)])
        return "publisher " + std::to_string(p) + "'s event " + std::to_string(i) +
               " is stored after its event " + std::to_string(last_of[static_cast<std::size_t>(p)]);
      last_of[static_cast<std::size_t>(p)] = i;
    }
    return {};
  }

  int report(const std::string& stored) {
    const auto& o = ctx_.opts;
    const std::size_t acks = publishers_.acks();
    const double publish_s = static_cast<double>(publishers_.last_ack_ns() - first_publish_ns_) / 1e9;
    const double events_per_s = publish_s > 0 ? static_cast<double>(acks) / publish_s : 0;
    const double requests_per_s = events_per_s / static_cast<double>(o.batch);
    const auto ack = publishers_.ack_latencies().summary();
    const double own_cpu = own_cpu_after_ - own_cpu_before_;
    std::optional<double> node_cpu;
    if (node_cpu_before_ && node_cpu_after_) node_cpu = *node_cpu_after_ - *node_cpu_before_;
    auto per_event_us = [&](double cpu) { return acks ? cpu * 1e6 / static_cast<double>(acks) : 0.0; };

    std::printf("publish (%s): %zu events over %zu stream(s), %zu-byte payload, %zu publishers",
                target_name(o.peer), o.events, streams_, o.payload_bytes, publishers_.count());
    if (o.batch > 1) std::printf(", %zu per request", o.batch);
    if (o.rate > 0) std::printf(", offered %.0f /s", o.rate);
    std::printf("\n");
    std::printf("  acknowledged      %zu events in %.3f s = %.0f /s (%.0f requests/s)\n", acks, publish_s,
                events_per_s, requests_per_s);
    std::printf("  ack latency (ms)  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", ack.p50_ms,
                ack.p90_ms, ack.p99_ms, ack.p999_ms, ack.max_ms);
    if (node_cpu)
      std::printf("  cpu (s)           node %.2f (%.2f us/event)  client %.2f (%.2f us/event)\n", *node_cpu,
                  per_event_us(*node_cpu), own_cpu, per_event_us(own_cpu));
    else
      std::printf("  cpu (s)           node n/a (give --pid)  client %.2f (%.2f us/event)\n", own_cpu,
                  per_event_us(own_cpu));
    if (failure_.empty()) std::printf("  stored            %s\n", stored.c_str());

    json j = {
        {"scenario", "publish"},
        {"target", target_name(o.peer)},
        {"streams", streams_},
        {"batch", o.batch},
        {"offered_rate", o.rate > 0 ? json(o.rate) : json()},
        {"events", o.events},
        {"payload_bytes", o.payload_bytes},
        {"publishers", publishers_.count()},
        {"acks", acks},
        {"publish_s", publish_s},
        {"acks_per_s", events_per_s},
        {"requests_per_s", requests_per_s},
        {"ack_latency_ms",
         {{"p50", ack.p50_ms},
          {"p90", ack.p90_ms},
          {"p99", ack.p99_ms},
          {"p99.9", ack.p999_ms},
          {"max", ack.max_ms}}},
        {"node_cpu_s", node_cpu ? json(*node_cpu) : json()},
        {"client_cpu_s", own_cpu},
        {"stored_checked", o.peer == target::tidings && failure_.empty()},
    };
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
    if (!failure_.empty()) {
      std::cerr << "tidings-load: FAILED: " << failure_ << "\n";
      return 1;
    }
    return 0;
  }

  scenario_context& ctx_;
  std::string pad_;  // before publishers_, which keeps a reference
  publisher_group publishers_;
  net::steady_timer deadline_;
  std::size_t streams_;
  std::vector<std::size_t> per_stream_;  // events each stream gets
  std::vector<stream_head> heads_before_;
  std::string failure_;
  std::int64_t first_publish_ns_ = 0;
  std::optional<double> node_cpu_before_, node_cpu_after_;
  double own_cpu_before_ = 0, own_cpu_after_ = 0;
};

}  // namespace

int run_publish(scenario_context& ctx) {
  publish_run run(ctx);
  return run.run();
}

}  // namespace tidings::load
