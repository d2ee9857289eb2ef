#include "sources/probe.hpp"

#include <vector>

namespace tidings::sources {

namespace {

// Every strategy a connector has today (upstream::strategy()).
const std::vector<std::string_view>& strategies() {
  static const std::vector<std::string_view> all = {"subscribe",  "webhook", "poll",    "sql_polling",
                                                    "nats_topic", "listen",  "inotify", "watch"};
  return all;
}

prometheus::Counter& plain_counter(prometheus::Registry& registry, const std::string& name,
                                   const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

probe::probe(prometheus::Registry& registry, audit_fn audit)
    : active_(registry, "tidings_watch_active_watchers",
              "Upstream watchers (sources) running now, one per source key, by how changes reach us",
              "strategy", strategies()),
      fired_(registry, "tidings_watch_fired_total", "Change signals received from upstream watchers",
             "strategy", strategies()),
      sent_(registry, "tidings_watch_notifications_sent_total",
            "Events upstream watchers published to their source streams", "strategy", strategies()),
      poll_failures_(
          plain_counter(registry, "tidings_watch_poll_failures_total",
                        "Poll fetches that failed (the watcher goes on and retries at the next tick)")),
      resubscribes_(plain_counter(registry, "tidings_source_resubscribes_total",
                                  "Upstream subscriptions that ended and were made again after a backoff")),
      failures_(plain_counter(registry, "tidings_source_failures_total",
                              "Sources that gave up or could not start (their subscribers saw an error)")),
      retrying_(prometheus::BuildGauge()
                    .Name("tidings_sources_retrying")
                    .Help("Sources past their backoff steps, retrying their upstream at the last step's pace")
                    .Register(registry)
                    .Add({})),
      audit_(std::move(audit)) {}

probe::active_watcher::active_watcher(probe& p, std::string strategy)
    : probe_(p), strategy_(std::move(strategy)) {
  probe_.active_.at(strategy_).Increment();
}

probe::active_watcher::~active_watcher() {
  probe_.active_.at(strategy_).Decrement();
}

probe::retrying_source::retrying_source(probe& p, std::string tenant, std::string uri,
                                        const std::string& reason)
    : probe_(p), tenant_(std::move(tenant)), uri_(std::move(uri)) {
  probe_.retrying_.Increment();
  probe_.audit("source.retrying", {{"tenant", tenant_}, {"uri", uri_}, {"reason", reason}});
}

probe::retrying_source::~retrying_source() {
  probe_.retrying_.Decrement();
  if (down_ms_ >= 0)
    probe_.audit("source.recovered", {{"tenant", tenant_}, {"uri", uri_}, {"down_ms", down_ms_}});
}

void probe::fired(std::string_view strategy, const std::string& tenant, const std::string& uri,
                  std::uint64_t subscribers) {
  fired_.add(strategy);
  audit("watch.fired",
        {{"tenant", tenant}, {"uri", uri}, {"strategy", strategy}, {"subscribers", subscribers}});
}

void probe::notifications_sent(std::string_view strategy, std::size_t events) {
  sent_.add(strategy, static_cast<double>(events));
}

void probe::poll_failed(const std::string& tenant, const std::string& uri, const std::string& error) {
  poll_failures_.Increment();
  audit("source.poll_failed", {{"tenant", tenant}, {"uri", uri}, {"error", error}});
}

void probe::resubscribing(const std::string& tenant, const std::string& uri, const std::string& reason) {
  resubscribes_.Increment();
  audit("source.resubscribing", {{"tenant", tenant}, {"uri", uri}, {"reason", reason}});
}

void probe::failed(const std::string& tenant, const std::string& uri, const std::string& error) {
  failures_.Increment();
  audit("source.failed", {{"tenant", tenant}, {"uri", uri}, {"error", error}});
}

}  // namespace tidings::sources
