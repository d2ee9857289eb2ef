#include "cluster/stored_log.hpp"

#include <chrono>

#include "core/cursor.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {

log_chunk read_chunk(persistence::store& store, const actors::stream_key& key, const std::string& self_id,
                     std::uint64_t after_seq, std::size_t max) {
  log_chunk c;
  std::optional<persistence::stream_meta> meta;
  if (auto s = store.get_stream(key.tenant, key.name, &meta); !s.ok() || !meta) return c;
  c.meta = *meta;
  c.meta.id = 0;
  if (c.meta.term_owner.empty()) c.meta.term_owner = self_id;
  auto after = std::max(after_seq, meta->first_seq - 1);
  if (auto s = store.read_events(meta->id, after, meta->head_seq, max, &c.events); !s.ok()) {
    logging::error("cluster.take_read_failed", {{"stream", key.name}, {"error", s.message()}});
    c.status = log_chunk::kind::retry;
    c.events.clear();
    return c;
  }
  c.status = log_chunk::kind::log;
  // The keys go with the first chunk (bounded like a chunk).
  const auto this_epoch = [epoch = meta->epoch](const persistence::idempotency_record& rec) {
    return rec.epoch == epoch;
  };
  if (after_seq == 0 && !store.list_idempotency(meta->id, 10 * chunk_events, this_epoch, &c.idempotency).ok())
    c.idempotency.clear();
  c.more = !c.events.empty() && c.events.back().seq < meta->head_seq;
  return c;
}

std::shared_ptr<actors::stream_handoff> renumbered_copy(persistence::store& store,
                                                        const actors::stream_key& key,
                                                        const std::string& self_id, std::uint64_t log_epoch) {
  auto log = std::make_shared<actors::stream_handoff>();
  std::optional<persistence::stream_meta> stored;
  if (auto s = store.get_stream(key.tenant, key.name, &stored); !s.ok()) return nullptr;
  if (!stored) {
    // No copy: the stream starts empty, but in the record's epoch.
    log->meta.tenant = key.tenant;
    log->meta.name = key.name;
    log->meta.epoch = log_epoch;
    log->meta.first_seq = 1;
    log->meta.head_seq = 0;
    log->meta.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    return log;
  }
  std::uint64_t after = 0;
  for (;;) {
    auto chunk = read_chunk(store, key, self_id, after, chunk_events);
    if (chunk.status != log_chunk::kind::log) return nullptr;
    if (after == 0) log->meta = std::move(chunk.meta);
    log->events.insert(log->events.end(), std::make_move_iterator(chunk.events.begin()),
                       std::make_move_iterator(chunk.events.end()));
    if (!chunk.more || log->events.empty()) break;
    after = log->events.back().seq;
  }
  logging::warn("cluster.log_renumbered", {{"stream", key.name},
                                           {"from", core::format_epoch(log->meta.epoch)},
                                           {"to", core::format_epoch(log_epoch)},
                                           {"head", log->meta.head_seq}});
  log->meta.epoch = log_epoch;
  return log;
}

}  // namespace tidings::cluster
