#include "broker/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <vector>

#include "net/tls_context.hpp"

namespace tidings::broker {

namespace {

prometheus::MetricFamily gauge(std::string name, std::string help, double value,
                               std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return {std::move(name), std::move(help), prometheus::MetricType::Gauge, {m}};
}

void add_storage(const persistence::storage_stats& s, const persistence::write_guard* guard,
                 std::vector<prometheus::MetricFamily>& out) {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  out.push_back(gauge("tidings_storage_sst_bytes", "Bytes of RocksDB table files (every column family)",
                      d(s.sst_bytes)));
  out.push_back(gauge("tidings_storage_live_data_bytes", "RocksDB's estimate of live data, without garbage",
                      d(s.live_data_bytes)));
  out.push_back(gauge("tidings_storage_memtable_bytes", "Bytes in RocksDB memtables", d(s.memtable_bytes)));
  out.push_back(gauge("tidings_storage_pending_compaction_bytes",
                      "Bytes RocksDB estimates compaction still has to rewrite",
                      d(s.pending_compaction_bytes)));
  const auto health = guard ? guard->current() : persistence::write_guard::health{};
  using state = persistence::write_guard::state;
  out.push_back(
      gauge("tidings_storage_write_stopped",
            "1 while writes stop: RocksDB stalls them (publishes wait), or the node refuses them "
            "(disk under its reserve, or a failed write not yet recovered: publishes get 507 or 503)",
            s.write_stopped || health.now != state::writable ? 1 : 0));
  auto refusing = gauge("tidings_storage_refusing",
                        "Why the node refuses writes now: 1 on the reason's label (full, failed), else 0",
                        health.now == state::full ? 1 : 0, {{"reason", "full"}});
  refusing.metric.push_back(
      gauge("", "", health.now == state::failed ? 1 : 0, {{"reason", "failed"}}).metric.front());
  out.push_back(std::move(refusing));
  out.push_back(gauge("tidings_storage_free_bytes",
                      "Free bytes on the data directory's file system, as last checked before a write",
                      d(health.free_bytes)));
  out.push_back(gauge("tidings_storage_reserve_bytes",
                      "Free space the node keeps: writes are refused below it (storage-reserve-mb)",
                      d(health.reserve_bytes)));
  out.push_back(gauge("tidings_storage_delayed_write_rate_bytes",
                      "The rate RocksDB slows writes to while it catches up; 0 when not slowed",
                      d(s.delayed_write_rate)));
  out.push_back(gauge("tidings_storage_flush_pending", "Column families waiting for a memtable flush",
                      d(s.flush_pending)));
  out.push_back(
      gauge("tidings_storage_running_flushes", "Memtable flushes running now", d(s.running_flushes)));
  out.push_back(
      gauge("tidings_storage_running_compactions", "Compactions running now", d(s.running_compactions)));
}

// Kept by the HTTP client for every https:// upstream (issue 24).
void add_tls_failures(std::vector<prometheus::MetricFamily>& out) {
  prometheus::MetricFamily family;
  family.name = "tidings_upstream_tls_failures_total";
  family.help = "Failed TLS handshakes with upstreams since start, by upstream (host:port) and kind";
  family.type = prometheus::MetricType::Counter;
  for (const auto& f : net::tls_failure_counts()) {
    prometheus::ClientMetric m;
    m.label = {{"upstream", f.upstream}, {"kind", f.kind}};
    m.counter.value = static_cast<double>(f.count);
    family.metric.push_back(std::move(m));
  }
  if (!family.metric.empty()) out.push_back(std::move(family));
}

}  // namespace

metrics::metrics(const persistence::store& store, sources::probe::audit_fn audit)
    : hubs_(*registry_), relay_(*registry_), sources_(*registry_, std::move(audit)), store_(store) {}

std::string metrics::scrape() const {
  auto families = registry_->Collect();
  add_storage(store_.stats(), guard_, families);
  add_tls_failures(families);
  // One node, alive: this node. The cluster's membership replaces this
  // once nodes join each other.
  families.push_back(gauge("tidings_cluster_members", "Cluster members this node knows of, by state", 1,
                           {{"state", "alive"}}));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace tidings::broker
