#include "actors/hub.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "actors/hub_registry.hpp"
#include "logging/log.hpp"

namespace tidings::actors {
namespace {

using self_ptr = hub_actor::stateful_pointer<hub_state>;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Seeded once per thread from the OS: opening a random_device for every
// new stream was a visible cost when streams are created by the thousand.
std::uint64_t random_epoch() {
  thread_local std::mt19937_64 engine = [] {
    std::random_device rd;
    std::seed_seq seed{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seed);
  }();
  std::uint64_t e = 0;
  while (e == 0) e = engine();
  return e;
}

core::cursor head_cursor(const hub_state& st) {
  return {st.meta ? st.meta->epoch : 0, st.committed_head};
}

void trim_ring(hub_state& st) {
  std::size_t dropped = 0;
  while (!st.ring.empty() && (st.ring.size() > st.cfg.ring_events || st.ring_bytes > st.cfg.ring_bytes ||
                              st.ring.front()->seq < st.committed_first)) {
    dropped += st.ring.front()->bytes.size();
    st.ring_bytes -= st.ring.front()->bytes.size();
    st.ring.pop_front();
  }
  if (st.cfg.metrics && dropped > 0) st.cfg.metrics->ring_bytes(-static_cast<std::int64_t>(dropped));
}

// Whether writes wait for the followers: a shipper exists and the hub's
// term began.
bool replicating(const hub_state& st) {
  return st.replicator && st.active;
}

// The write goes to the followers as it goes to the store (ADR 0017).
void ship(hub_state& st, const persistence::write_set& ws, std::uint64_t prev_seq) {
  if (!replicating(st) || !ws.meta) return;
  auto b = std::make_shared<replica_batch>();
  b->prev_seq = prev_seq;
  b->events = ws.events;
  b->idempotency = ws.idempotency;
  b->meta = *ws.meta;
  caf::anon_send(*st.replicator, ship_atom::value, replica_batch_ptr(std::move(b)));
}

// The stall timer (on_stall) runs within replication_timeout of now.
void arm_stall_timer(self_ptr self) {
  auto& st = self->state;
  if (st.stall_timer) return;
  st.stall_timer = true;
  self->delayed_send(self, st.cfg.replication_timeout, stall_atom::value);
}

void submit(self_ptr self, persistence::write_set ws, hub_state::in_flight entry) {
  auto& st = self->state;
  entry.head_after = st.meta ? st.meta->head_seq : 0;
  entry.token = st.next_token++;
  auto token = entry.token;
  // A publish waits for its followers at most so long before it hears
  // (one timer per hub, not per write).
  if (replicating(st) && !entry.frames.empty()) arm_stall_timer(self);
  st.pending.push_back(std::move(entry));
  hub_actor handle = self;
  ws.fence_on_failure = true;  // after a refusal, nothing past the hole (recover_from_store)
  st.cfg.committer->submit(std::move(ws), [handle, token](const persistence::status& s) {
    caf::anon_send(handle, committed_atom::value, token, s.message());
  });
}

void reply_to_waiters(hub_state& st, const std::string& key, const publish_result& r) {
  auto it = st.keys_in_flight.find(key);
  if (it == st.keys_in_flight.end()) return;
  for (auto& waiter : it->second) {
    publish_result copy = r;
    if (copy.outcome == publish_outcome::appended) copy.outcome = publish_outcome::replayed;
    waiter(std::move(copy));
  }
  st.keys_in_flight.erase(it);
}

bool create_stream(self_ptr self) {
  auto& st = self->state;
  std::uint64_t id = 0;
  if (auto s = st.cfg.store->allocate_stream_id(&id); !s.ok()) {
    logging::error("hub.create_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
    return false;
  }
  persistence::stream_meta m;
  m.tenant = st.cfg.stream.tenant;
  m.name = st.cfg.stream.name;
  m.id = id;
  m.epoch = random_epoch();
  m.first_seq = 1;
  m.head_seq = 0;
  m.created_ms = now_ms();
  m.term = st.active ? st.term : 0;
  st.meta = m;
  st.committed_first = 1;
  st.committed_head = 0;
  st.deleted_below = 0;
  logging::info("stream.created", {{"stream", m.name}, {"epoch", core::format_epoch(m.epoch)}});
  if (st.cfg.on_created) st.cfg.on_created();
  st.cfg.on_created = nullptr;  // counted once, even if its first write fails and it is made again
  return true;
}

void on_publish(self_ptr self, const publish_request_ptr& req);

// Publishes that waited for writable go on (in order): appended now,
// forwarded when the stream moved, refused when it is not writable soon.
void release_unwritable(self_ptr self) {
  auto& st = self->state;
  std::deque<std::pair<publish_request_ptr, std::chrono::steady_clock::time_point>> held;
  held.swap(st.held_unwritable);
  for (auto& [req, at] : held) on_publish(self, req);
}

bool recover_from_store(self_ptr self);
void on_moved(self_ptr self);

// Why the store takes no writes now, as the publisher hears it; nullopt
// while it does. Checked before seqs are assigned, so a full disk costs no
// failed write (and no hole to recover from).
std::optional<publish_result> storage_refusal(const hub_state& st) {
  const auto* guard = st.cfg.committer ? st.cfg.committer->guard() : nullptr;
  using state = persistence::write_guard::state;
  if (!guard || guard->now() == state::writable) return std::nullopt;
  auto h = guard->current();  // the reason, only when refusing
  return publish_result{
      h.now == state::full ? publish_outcome::storage_full : publish_outcome::unavailable, {}, h.reason};
}

void on_publish(self_ptr self, const publish_request_ptr& req) {
  auto& st = self->state;
  auto unavailable = [&](std::string why) {
    req->reply(publish_result{publish_outcome::unavailable, {}, std::move(why)});
  };
  if (st.moved) return caf::anon_send(st.cfg.registry->get(st.cfg.stream), publish_atom::value, req);
  st.last_active = std::chrono::steady_clock::now();
  if (st.awaiting && !st.hold_reason.empty()) return unavailable(st.hold_reason);
  if (st.awaiting) return st.held_publishes.push_back(req);
  if (auto refused = storage_refusal(st)) return req->reply(std::move(*refused));
  if (st.failed && !recover_from_store(self))
    return unavailable("the stream's storage failed and it has not recovered yet; see the node log");
  if (st.fenced)
    return unavailable("this node no longer owns the stream; retry (with the same Idempotency-Key)");
  if (replicating(st) && !st.writable) {
    if (!st.writable_soon) return unavailable(st.unwritable);
    // A follower is catching up to make min-insync: wait for it a while.
    st.held_unwritable.emplace_back(req, std::chrono::steady_clock::now());
    return arm_stall_timer(self);
  }

  const auto& key = req->idempotency_key;
  if (!key.empty()) {
    if (auto it = st.keys_in_flight.find(key); it != st.keys_in_flight.end()) {
      it->second.push_back(std::move(req->reply));
      return;
    }
    if (st.meta) {
      std::optional<persistence::idempotency_record> rec;
      if (auto s = st.cfg.store->get_idempotency(st.meta->id, key, &rec); !s.ok())
        return unavailable(s.message());
      if (rec && rec->epoch == st.meta->epoch) {
        publish_result r{publish_outcome::replayed, {}, {}};
        for (std::uint64_t i = 0; i < rec->count; ++i) r.cursors.push_back({rec->epoch, rec->first_seq + i});
        return req->reply(std::move(r));
      }
    }
  }
  if (!st.meta && !create_stream(self)) return unavailable("could not create the stream");

  auto& m = *st.meta;
  m.retention_count = st.cfg.retention.max_events;
  m.retention_age_ms = st.cfg.retention.max_age_ms;
  persistence::write_set ws;
  ws.stream_id = m.id;
  hub_state::in_flight entry;
  entry.accepted_at = std::chrono::steady_clock::now();
  const auto prev_seq = m.head_seq;
  auto t = now_ms();
  for (auto& ev : req->events) {
    ev.time_ms = t;
    core::cursor c{m.epoch, ++m.head_seq};
    entry.frames.push_back(std::make_shared<const core::sse_frame>(core::make_sse_frame(m.name, c, ev)));
    entry.cursors.push_back(c);
    ws.events.push_back({c.seq, std::move(ev)});
  }
  m.first_seq = core::first_kept_by_count(m.first_seq, m.head_seq, st.cfg.retention.max_events);
  if (auto cut = core::physical_trim_due(st.deleted_below, m.first_seq, st.cfg.retention.max_events)) {
    ws.trim_before = cut;
    st.deleted_below = cut;
  }
  if (!key.empty()) {
    ws.idempotency.push_back(
        {key, persistence::idempotency_record{m.epoch, entry.cursors.front().seq, entry.cursors.size(), t}});
    st.keys_in_flight[key];  // later duplicates wait for this one
  }
  ws.meta = m;
  ws.progress_puts = std::move(req->progress);
  ws.snapshot_puts = std::move(req->snapshots);
  entry.first_seq_after = m.first_seq;
  entry.reply = std::move(req->reply);
  entry.idempotency_key = key;
  ship(st, ws, prev_seq);
  submit(self, std::move(ws), std::move(entry));
}

// Frames now durable go into the ring and out to every sink, in order.
void deliver(hub_state& st, const std::vector<frame_ptr>& frames,
             std::chrono::steady_clock::time_point durable_at) {
  st.committed_head = frames.back()->seq;
  auto batch = std::make_shared<frame_batch>();
  batch->stream = st.cfg.stream;
  batch->epoch = st.meta->epoch;
  batch->frames = frames;
  batch->durable_at = durable_at;
  std::size_t added = 0;
  for (const auto& f : frames) {
    added += f->bytes.size();
    st.ring.push_back(f);
  }
  st.ring_bytes += added;
  if (auto* m = st.cfg.metrics) m->ring_bytes(static_cast<std::int64_t>(added));
  frame_batch_ptr shared = std::move(batch);
  for (auto& [raw, sink] : st.sinks) sink.first->deliver(shared);
}

// After failed writes, once none is in flight and the store takes writes
// again: the log is what the store holds. A write reported failed may have
// landed after all, so the head is read back, never guessed: new seqs
// follow it (no cursor is handed out twice, none skipped), and events the
// store holds past what the sessions got go out now. A replicated stream
// stays refused: its followers may hold what the failed write shipped, and
// only the cluster's handoff (a restart) settles which log is the stream's.
bool recover_from_store(self_ptr self) {
  auto& st = self->state;
  if (!st.pending.empty() || replicating(st) || st.moved || st.fenced || storage_refusal(st)) return false;
  std::optional<persistence::stream_meta> meta;
  if (auto s = st.cfg.store->get_stream(st.cfg.stream.tenant, st.cfg.stream.name, &meta); !s.ok())
    return false;
  std::uint64_t recovered = 0;
  if (meta && st.meta && meta->epoch == st.meta->epoch) {
    st.meta = meta;
    for (auto after = st.committed_head; after < meta->head_seq;) {
      std::vector<persistence::stored_event> events;
      if (auto s = st.cfg.store->read_events(meta->id, after, meta->head_seq, 256, &events); !s.ok())
        return false;
      // The committer fences a stream at its first failed write, so the
      // store holds no hole; should it, the stream stays refused (logged).
      if (events.empty() || events.front().seq != after + 1) {
        logging::error("stream.recovery_refused",
                       {{"stream", st.cfg.stream.name}, {"after", after}, {"head", meta->head_seq}});
        return false;
      }
      std::vector<frame_ptr> frames;
      frames.reserve(events.size());
      for (auto& e : events)
        frames.push_back(std::make_shared<const core::sse_frame>(
            core::make_sse_frame(meta->name, {meta->epoch, e.seq}, e.ev)));
      after = events.back().seq;
      recovered += frames.size();
      deliver(st, frames, std::chrono::steady_clock::now());
    }
    trim_ring(st);
  }
  // The committer takes this stream's writes again (under either id).
  if (st.meta) st.cfg.committer->release_stream(st.meta->id);
  if (meta) st.cfg.committer->release_stream(meta->id);
  st.meta = meta;
  st.committed_head = meta ? meta->head_seq : 0;
  st.committed_first = meta ? meta->first_seq : 1;
  st.deleted_below = 0;  // a refused trim may have moved it: found again by the next trim
  st.failed = false;
  logging::info("stream.recovered", {{"stream", st.cfg.stream.name},
                                     {"head", st.committed_head},
                                     {"events_stored_after_failure", recovered}});
  return true;
}

// A write that is durable here, and on the write quorum when replicating:
// the publisher hears, the ring and the sinks get its frames.
void complete(self_ptr self, hub_state::in_flight& entry) {
  auto& st = self->state;
  if (entry.frames.empty() && entry.first_seq_after != st.committed_first) {
    logging::debug("stream.trimmed",
                   {{"stream", st.cfg.stream.name}, {"first_seq", entry.first_seq_after}, {"by", "age"}});
  }
  st.committed_first = entry.first_seq_after;
  auto durable_at = std::chrono::steady_clock::now();
  // Counted before anyone hears of it, so a scrape after the reply sees it.
  if (auto* m = st.cfg.metrics; m && !entry.frames.empty()) {
    m->published(st.cfg.stream.name, entry.frames.size());
    m->publish_duration(durable_at - entry.accepted_at);
  }
  // The publisher hears first: whatever it does on the reply (a watch counts
  // its notice) happens before any subscriber can see the event.
  {
    publish_result r{publish_outcome::appended, entry.cursors, {}};
    if (entry.reply) entry.reply(r);
    if (!entry.idempotency_key.empty()) reply_to_waiters(st, entry.idempotency_key, r);
  }
  if (!entry.frames.empty()) deliver(st, entry.frames, durable_at);
  trim_ring(st);
}

// A failed write: later writes may land after it, so refusing everything
// from here keeps us from acknowledging a log with a hole in it, until
// recover_from_store() reads the log's head back once the store is writable.
void fail(hub_state& st, hub_state::in_flight& entry) {
  if (!st.failed)
    logging::error("hub.write_failed", {{"stream", st.cfg.stream.name}, {"error", entry.error}});
  st.failed = true;
  publish_result r{publish_outcome::unavailable, {}, "the write failed: " + entry.error};
  if (auto refused = storage_refusal(st); refused && refused->outcome == publish_outcome::storage_full)
    r = *refused;
  if (entry.reply) entry.reply(r);
  if (!entry.idempotency_key.empty()) reply_to_waiters(st, entry.idempotency_key, r);
}

// Completes the writes at the front that are done, in order: durable here
// and, when replicating, held by the write quorum.
void settle(self_ptr self) {
  auto& st = self->state;
  while (!st.pending.empty()) {
    auto& front = st.pending.front();
    if (!front.durable) break;
    bool has_events = !front.frames.empty();
    if (!front.error.empty() || st.failed) {
      if (front.error.empty()) front.error = "an earlier write failed";
      fail(st, front);
    } else if (st.fenced) {
      // Answered when the hub was fenced; its events are not this term's.
    } else if (replicating(st) && has_events && front.frames.back()->seq > st.replicated) {
      break;
    } else {
      complete(self, front);
    }
    st.pending.pop_front();
  }
  if (st.pending.empty()) {
    for (auto& rp : st.quiesce_waiters) rp.deliver(true);
    st.quiesce_waiters.clear();
  }
  if (st.cfg.retention.max_age_ms > 0 && !st.trim_scheduled && !st.moved && !st.fenced) {
    st.trim_scheduled = true;
    self->send(self, trim_atom::value);
  }
}

void on_committed(self_ptr self, std::uint64_t token, const std::string& error) {
  auto& st = self->state;
  auto it = std::find_if(st.pending.begin(), st.pending.end(), [](const auto& e) { return !e.durable; });
  if (it == st.pending.end() || it->token != token) {
    logging::error("hub.commit_out_of_order", {{"stream", st.cfg.stream.name}, {"token", token}});
    return;
  }
  it->durable = true;
  it->error = error;
  if (error.empty() && replicating(st)) caf::anon_send(*st.replicator, local_atom::value, it->head_after);
  settle(self);
}

// Writes not yet acknowledged are answered "retry" (the hub moves on or
// was fenced): their events may still turn up in the log later, which a
// retry with the same Idempotency-Key is answered from.
void abandon_unacknowledged(hub_state& st, const std::string& why) {
  if (!replicating(st)) return;
  publish_result r{publish_outcome::uncertain, {}, why};
  for (auto& entry : st.pending) {
    if (entry.frames.empty() || !entry.error.empty()) continue;
    if (entry.reply) entry.reply(r);
    entry.reply = nullptr;
    if (!entry.idempotency_key.empty()) reply_to_waiters(st, entry.idempotency_key, r);
    entry.idempotency_key.clear();
    entry.frames.clear();  // never delivered from here
  }
}

// Frames (after_seq, up to max], from the ring when it reaches back far
// enough, else from the store. Returns false when the store no longer has
// after_seq + 1 (trimmed meanwhile).
bool collect(hub_state& st, std::uint64_t after_seq, std::size_t max, std::size_t max_bytes,
             std::vector<frame_ptr>& out) {
  std::size_t bytes = 0;
  auto full = [&] { return out.size() >= max || (!out.empty() && bytes >= max_bytes); };
  if (!st.ring.empty() && st.ring.front()->seq <= after_seq + 1) {
    for (auto i = after_seq + 1 - st.ring.front()->seq; i < st.ring.size() && !full(); ++i) {
      bytes += st.ring[i]->bytes.size();
      out.push_back(st.ring[i]);
    }
    return true;
  }
  std::vector<persistence::stored_event> events;
  auto s = st.cfg.store->read_events(st.meta->id, after_seq, st.committed_head, max, &events);
  if (!s.ok()) {
    logging::error("hub.read_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
    return false;
  }
  if (events.empty() || events.front().seq != after_seq + 1) return false;
  for (auto& e : events) {
    if (e.seq != after_seq + 1 + out.size() || full()) break;  // never hand out a gap
    auto f = std::make_shared<const core::sse_frame>(
        core::make_sse_frame(st.cfg.stream.name, {st.meta->epoch, e.seq}, e.ev));
    bytes += f->bytes.size();
    out.push_back(std::move(f));
  }
  return true;
}

// `rechecked`: the followers have just confirmed this term again, so a
// cursor past the head is bogus now.
void on_fetch(self_ptr self, const fetch_request_ptr& req, bool rechecked = false) {
  auto& st = self->state;
  if (st.moved) return caf::anon_send(st.cfg.registry->get(st.cfg.stream), fetch_atom::value, req);
  st.last_active = std::chrono::steady_clock::now();
  if (st.awaiting) return st.held_fetches.push_back(req);
  fetch_reply r;
  r.subscription = req->subscription;
  r.epoch = st.meta ? st.meta->epoch : 0;
  r.head = head_cursor(st);
  auto send = [&](fetch_status status, std::string reason = {}) {
    r.status = status;
    // After a failover the old epoch's cursors are gone with their owner.
    if (st.cfg.taken_over && (reason == "unknown_stream" || reason == "epoch_changed"))
      reason = "owner_changed";
    r.reason = std::move(reason);
    if (status == fetch_status::caught_up && !req->probe) {
      auto& slot = st.sinks[req->sink.get()];
      slot.first = req->sink;
      ++slot.second;
      r.registered = true;
      r.registered_at = self->address();
    }
    req->sink->fetched(st.cfg.stream, std::move(r));
  };

  if (!req->after) return send(fetch_status::caught_up);
  auto after = *req->after;
  if (!st.meta) {
    if (after.epoch != 0 || after.seq != 0) return send(fetch_status::resync, "unknown_stream");
    return send(fetch_status::caught_up);
  }
  if (after.epoch == 0) {
    if (after.seq != 0) return send(fetch_status::resync, "unknown_stream");
    after.epoch = st.meta->epoch;
  }
  if (after.epoch != st.meta->epoch) return send(fetch_status::resync, "epoch_changed");
  // Up to the head including writes in flight: the store (and so the REST
  // API) can show a commit before this actor has processed its confirmation.
  switch (core::check_resume(after.seq, st.committed_first, st.meta->head_seq)) {
    case core::resume_check::too_old:
      return send(fetch_status::resync, "cursor_too_old");
    case core::resume_check::ahead_of_head:
      // In this epoch, a cursor past the head was handed out by another
      // term's owner, unless the followers have confirmed ours: the hub is
      // then fenced shortly, and the fetch goes on to its successor. A
      // confirmation from before a pause may be stale, so the followers
      // are asked again once before the cursor is called bogus.
      if (replicating(st) && !st.confirmed) return st.held_ahead.push_back(req);
      if (replicating(st) && !rechecked) {
        st.confirmed = false;
        st.held_ahead.push_back(req);
        caf::anon_send(*st.replicator, reconfirm_atom::value);
        return;
      }
      return send(fetch_status::resync, "cursor_ahead");
    case core::resume_check::ok:
      break;
  }
  if (req->probe) return send(fetch_status::page);
  // At or past what this actor has confirmed: live from here; the session
  // drops batches at or below its cursor.
  if (after.seq >= st.committed_head) return send(fetch_status::caught_up);
  if (!collect(st, after.seq, std::max<std::size_t>(req->max_frames, 1), req->max_bytes, r.frames))
    return send(fetch_status::resync, "cursor_too_old");
  auto last = r.frames.empty() ? after.seq : r.frames.back()->seq;
  send(last == st.committed_head ? fetch_status::caught_up : fetch_status::page);
}

void arm_idle(self_ptr self, std::chrono::steady_clock::duration delay) {
  auto& st = self->state;
  if (st.idle_armed) return;
  st.idle_armed = true;
  self->delayed_send(
      self, std::chrono::duration_cast<std::chrono::milliseconds>(delay) + std::chrono::milliseconds(1),
      idle_atom::value);
}

// Nobody waits on the hub and nothing is under way in it.
bool quiet(const hub_state& st) {
  return !st.awaiting && st.sinks.empty() && st.pending.empty() && st.held_publishes.empty() &&
         st.held_fetches.empty() && st.held_ahead.empty() && st.held_unwritable.empty();
}

// A hub whose stream does not exist holds a place among the registry's
// unknown streams: once nobody waits on it the registry drops it at once,
// so sessions on made-up names cannot use the places up (issue 28). An
// existing stream's hub goes once it has been idle for idle_release: its
// memory returns, and the next request spawns a hub from the store.
void release_if_idle(self_ptr self) {
  auto& st = self->state;
  if (st.moved || st.fenced || !st.cfg.registry) return;
  // Age retention trims only while the hub lives: such a stream's hub stays.
  const bool releasable_when_idle =
      st.cfg.idle_release.count() > 0 && !st.replicator && !st.failed && st.cfg.retention.max_age_ms <= 0;
  if (!quiet(st)) {
    // Busy without sessions (a write under way): look again later.
    if (st.sinks.empty() && (!st.meta || releasable_when_idle))
      arm_idle(self, st.meta ? st.cfg.idle_release : st.cfg.unknown_grace);
    return;
  }
  if (st.meta) {
    if (!releasable_when_idle) return;
    auto idle_for = std::chrono::steady_clock::now() - st.last_active;
    if (idle_for < st.cfg.idle_release) return arm_idle(self, st.cfg.idle_release - idle_for);
  }
  if (!st.cfg.registry->release_idle(st.cfg.stream, self->address(), st.meta.has_value())) return;
  // Moved at once, not when a message says so: a publish or fetch sent by
  // a thread that got this handle just before the release may already be
  // in the mailbox, and is forwarded to the stream's next hub instead of
  // being written here beside it.
  st.released = true;
  on_moved(self);
}

void on_unsub(self_ptr self, const fanout_sink_ptr& sink) {
  auto& sinks = self->state.sinks;
  auto it = sinks.find(sink.get());
  if (it == sinks.end()) return;
  if (--it->second.second == 0) sinks.erase(it);
  if (sinks.empty()) {
    self->state.last_active = std::chrono::steady_clock::now();
    release_if_idle(self);
  }
}

// Replication: the hub's term begins with the log it has now. The term goes
// into the store at once (a copy's term says which writer it follows), and
// the shipper brings the followers to this log.
void activate(self_ptr self) {
  auto& st = self->state;
  if (st.active || !st.replicator || st.moved || st.failed) return;
  st.active = true;
  st.confirmed = false;
  replica_base base;
  if (st.meta)
    base = {st.meta->term, st.meta->term_owner, st.meta->head_seq};
  else
    base.term = st.prior_term;
  // A new term for every leadership, its own log's too: a follower may
  // hold events this node shipped but never made durable before it
  // stopped, and only a newer term makes it cut them off (from the base,
  // this log's term and head) instead of taking the same seqs again as
  // "sent again" while they now carry other events. Taking over another
  // member's log fences that writer the same way.
  st.term = base.term + 1;
  st.replicated = st.committed_head;
  auto start = std::make_shared<replica_start>();
  start->base = base;
  if (st.meta) {
    st.meta->term = st.term;
    st.meta->term_owner.clear();  // this node's own log now
    start->meta = *st.meta;
    persistence::write_set ws;
    ws.stream_id = st.meta->id;
    ws.meta = *st.meta;
    hub_state::in_flight entry;
    entry.first_seq_after = st.committed_first;
    submit(self, std::move(ws), std::move(entry));
  } else {
    start->meta.tenant = st.cfg.stream.tenant;
    start->meta.name = st.cfg.stream.name;
    start->meta.term = st.term;
  }
  logging::debug("stream.term_began", {{"stream", st.cfg.stream.name}, {"term", st.term}});
  caf::anon_send(*st.replicator, begin_atom::value, replica_start_ptr(std::move(start)));
}

// What waited for a handoff runs now, in the order it came, once the hub's
// term began.
void release_held(self_ptr self) {
  auto& st = self->state;
  st.awaiting = false;
  st.hold_reason.clear();
  activate(self);
  // Swapped out, not moved from: what runs now may hold new requests again.
  std::vector<publish_request_ptr> publishes;
  std::vector<fetch_request_ptr> fetches;
  publishes.swap(st.held_publishes);
  fetches.swap(st.held_fetches);
  for (auto& p : publishes) on_publish(self, p);
  for (auto& f : fetches) on_fetch(self, f);
  for (auto& rp : st.quiesce_waiters) rp.deliver(true);
  st.quiesce_waiters.clear();
}

// The log another node held for this stream (cluster): stored under a new
// id of ours, replacing whatever older copy this node had, in one commit
// order. Until it is durable nothing is served.
void on_adopt(self_ptr self, const stream_handoff_ptr& handoff) {
  auto& st = self->state;
  if (!st.awaiting || st.adopting) return;
  if (!handoff || handoff->fresh) {
    // This node's store is what there is; a follower may have written to
    // it since the hub started.
    std::optional<persistence::stream_meta> meta;
    if (auto s = st.cfg.store->get_stream(st.cfg.stream.tenant, st.cfg.stream.name, &meta); !s.ok()) {
      logging::error("hub.load_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
      st.failed = true;
      return release_held(self);
    }
    if (meta && handoff) {
      // Not provably complete: its seqs may have been handed out past its
      // head by the lost owner, so they are not reused.
      logging::warn("stream.copy_dropped", {{"stream", st.cfg.stream.name},
                                            {"epoch", core::format_epoch(meta->epoch)},
                                            {"head", meta->head_seq}});
      persistence::write_set drop;
      drop.meta_delete = std::make_pair(meta->tenant, meta->name);
      drop.stream_id = meta->id;
      drop.trim_before = meta->head_seq + 1;
      st.cfg.committer->submit(std::move(drop), [](const persistence::status&) {});
      st.prior_term = meta->term;
      meta.reset();
    }
    st.meta = meta;
    st.committed_head = meta ? meta->head_seq : 0;
    st.committed_first = meta ? meta->first_seq : 1;
    return release_held(self);
  }
  std::uint64_t id = 0;
  if (auto s = st.cfg.store->allocate_stream_id(&id); !s.ok()) {
    logging::error("hub.adopt_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
    st.failed = true;
    return release_held(self);
  }
  if (st.meta) {
    persistence::write_set old;
    old.stream_id = st.meta->id;
    old.trim_before = st.meta->head_seq + 1;
    st.cfg.committer->submit(std::move(old), [](const persistence::status&) {});
  }
  auto m = handoff->meta;
  m.tenant = st.cfg.stream.tenant;
  m.name = st.cfg.stream.name;
  m.id = id;
  persistence::write_set ws;
  ws.meta = m;
  ws.stream_id = id;
  ws.events = handoff->events;
  ws.idempotency = handoff->idempotency;
  st.adopting = m;
  st.adopted_callback = handoff->committed;
  hub_actor handle = self;
  st.cfg.committer->submit(std::move(ws), [handle](const persistence::status& s) {
    caf::anon_send(handle, adopted_atom::value, s.message());
  });
}

void on_adopted(self_ptr self, const std::string& error) {
  auto& st = self->state;
  if (!error.empty()) {
    logging::error("hub.adopt_failed", {{"stream", st.cfg.stream.name}, {"error", error}});
    st.failed = true;
    return release_held(self);
  }
  auto m = *st.adopting;
  st.adopting.reset();
  st.meta = m;
  st.committed_head = m.head_seq;
  st.committed_first = m.first_seq;
  st.deleted_below = 0;       // a new id: nothing of it was deleted yet
  st.cfg.taken_over = false;  // the cursors of this epoch are good here
  if (st.cfg.on_created) {
    st.cfg.on_created();
    st.cfg.on_created = nullptr;
  }
  logging::info("stream.adopted", {{"stream", m.name},
                                   {"epoch", core::format_epoch(m.epoch)},
                                   {"head", m.head_seq},
                                   {"events", m.head_seq + 1 - m.first_seq}});
  if (st.adopted_callback) st.adopted_callback();
  st.adopted_callback = nullptr;
  release_held(self);
  if (st.cfg.retention.max_age_ms > 0 && !st.trim_scheduled) {
    st.trim_scheduled = true;
    self->send(self, trim_atom::value);
  }
}

// The registry now routes this stream elsewhere. Writes in flight still
// complete and answer their publishers (when replicating, those the
// followers have not confirmed are told to retry: the followers may already
// follow the next owner); what arrives later is forwarded, so a session or
// publisher holding this handle a moment too long is not lost. A second
// `moved` (sent to itself a minute later) ends the actor.
void on_moved(self_ptr self) {
  auto& st = self->state;
  if (st.moved) {
    if (st.pending.empty() && !st.adopting) return self->quit();
    self->delayed_send(self, std::chrono::seconds(1), moved_atom::value);
    return;
  }
  st.moved = true;
  logging::debug("stream.moved", {{"stream", st.cfg.stream.name}});
  abandon_unacknowledged(st, "the stream is moving between nodes");
  if (st.replicator) caf::anon_send_exit(*st.replicator, caf::exit_reason::user_shutdown);
  settle(self);  // abandoned writes that are durable leave now, so a quiesce can answer
  for (auto& [raw, sink] : st.sinks) sink.first->moved(st.cfg.stream, self->address());
  st.sinks.clear();
  for (auto& f : st.held_ahead) caf::anon_send(st.cfg.registry->get(st.cfg.stream), fetch_atom::value, f);
  st.held_ahead.clear();
  // Moved on before its handoff came: what waited goes to the new route.
  if (st.awaiting && !st.adopting) release_held(self);
  release_unwritable(self);
  // A released idle hub had nobody: late requests can only be a few.
  self->delayed_send(self, st.released ? std::chrono::seconds(2) : std::chrono::seconds(60),
                     moved_atom::value);
}

// Age retention runs as a timer after events, never as a periodic scan.
void on_trim(self_ptr self) {
  auto& st = self->state;
  st.trim_scheduled = false;
  auto max_age = st.cfg.retention.max_age_ms;
  if (!st.meta || max_age <= 0 || st.failed || st.moved || st.fenced) return;
  auto cutoff = now_ms() - max_age;
  auto first = st.meta->first_seq;
  std::optional<std::int64_t> oldest_kept;
  while (first <= st.committed_head) {
    std::vector<persistence::stored_event> events;
    if (auto s = st.cfg.store->read_events(st.meta->id, first - 1, st.committed_head, 256, &events);
        !s.ok() || events.empty())
      break;
    bool done = false;
    for (auto& e : events) {
      if (e.ev.time_ms >= cutoff) {
        oldest_kept = e.ev.time_ms;
        done = true;
        break;
      }
      first = e.seq + 1;
    }
    if (done) break;
  }
  if (first > st.meta->first_seq) {
    st.meta->first_seq = first;
    persistence::write_set ws;
    ws.stream_id = st.meta->id;
    ws.trim_before = first;
    st.deleted_below = first;
    ws.meta = *st.meta;
    hub_state::in_flight entry;
    entry.first_seq_after = first;
    ship(st, ws, st.meta->head_seq);
    submit(self, std::move(ws), std::move(entry));
  }
  if (oldest_kept) {
    st.trim_scheduled = true;
    auto wait = std::max<std::int64_t>(*oldest_kept + max_age - now_ms(), 10);
    self->delayed_send(self, std::chrono::milliseconds(wait), trim_atom::value);
  }
}

// Writes the followers have not confirmed in time (one does not answer, or
// does not see this node as the owner yet): their publishers hear "retry"
// rather than wait on. The writes stay and complete (reaching subscribers)
// if the followers confirm them later; a publish with the same
// Idempotency-Key meanwhile waits for that.
void on_stall(self_ptr self) {
  auto& st = self->state;
  st.stall_timer = false;
  if (!replicating(st)) return;
  auto now = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> next;
  // Publishes that waited for min-insync too long: refused (nothing written).
  while (!st.held_unwritable.empty() &&
         now - st.held_unwritable.front().second >= st.cfg.replication_timeout) {
    st.held_unwritable.front().first->reply(publish_result{
        publish_outcome::unavailable,
        {},
        st.unwritable + " (waited " + std::to_string(st.cfg.replication_timeout.count()) + " ms)"});
    st.held_unwritable.pop_front();
  }
  if (!st.held_unwritable.empty()) next = st.held_unwritable.front().second + st.cfg.replication_timeout;
  for (auto& entry : st.pending) {
    if (!entry.reply || entry.frames.empty()) continue;
    if (now - entry.accepted_at < st.cfg.replication_timeout) {
      auto due = entry.accepted_at + st.cfg.replication_timeout;
      if (!next || due < *next) next = due;
      continue;
    }
    logging::warn(
        "stream.replication_stalled",
        {{"stream", st.cfg.stream.name}, {"acknowledged", st.replicated}, {"seq", entry.cursors.back().seq}});
    entry.reply(publish_result{
        publish_outcome::uncertain, {}, "the stream's followers did not confirm the write in time"});
    entry.reply = nullptr;
  }
  if (next) {
    st.stall_timer = true;
    self->delayed_send(
        self,
        std::chrono::duration_cast<std::chrono::milliseconds>(*next - now) + std::chrono::milliseconds(1),
        stall_atom::value);
  }
}

// A newer term of the stream exists at `member` (a follower refused this
// term, or a member holds its own log of a later one): this hub stops
// serving and the registry replaces it with one that pulls that log.
void on_fenced(self_ptr self, const std::string& member) {
  auto& st = self->state;
  if (st.fenced || st.moved) return;
  st.fenced = true;
  if (st.cfg.metrics) st.cfg.metrics->replication_fenced();
  logging::warn("stream.fenced", {{"stream", st.cfg.stream.name}, {"term", st.term}, {"by", member}});
  abandon_unacknowledged(st, "this node no longer owns the stream");
  release_unwritable(self);
  settle(self);
  if (st.cfg.registry) st.cfg.registry->replace(st.cfg.stream, self, member);
}

void on_check_term(self_ptr self, std::uint64_t term, const std::string& member) {
  auto& st = self->state;
  if (st.active && term > st.term) on_fenced(self, member);
}

}  // namespace

hub_actor::behavior_type hub(hub_actor::stateful_pointer<hub_state> self, hub_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  std::optional<persistence::stream_meta> meta;
  if (auto s = st.cfg.store->get_stream(st.cfg.stream.tenant, st.cfg.stream.name, &meta); !s.ok()) {
    logging::error("hub.load_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
    st.failed = true;
  }
  st.awaiting = st.cfg.await_handoff;
  if (meta) {
    st.meta = meta;
    st.committed_head = meta->head_seq;
    st.committed_first = meta->first_seq;
    if (st.cfg.retention.max_age_ms > 0) {
      st.trim_scheduled = true;
      self->send(self, trim_atom::value);
    }
  }
  if (st.cfg.replicator && !st.failed) {
    st.replicator = st.cfg.replicator(self);
    // Publishes wait for the shipper's first word on writability (min-insync).
    st.writable = false;
    st.writable_soon = true;
    st.unwritable = "the stream's followers are not known yet; retry";
    // The shipper lives as long as its hub.
    if (st.replicator)
      self->attach_functor([r = *st.replicator] { caf::anon_send_exit(r, caf::exit_reason::user_shutdown); });
  }
  if (!st.awaiting) activate(self);
  if (!st.meta)
    arm_idle(self, st.cfg.unknown_grace);
  else if (st.cfg.idle_release.count() > 0)
    arm_idle(self, st.cfg.idle_release);
  return {
      [self](publish_atom, const publish_request_ptr& req) { on_publish(self, req); },
      [self](fetch_atom, const fetch_request_ptr& req) { on_fetch(self, req); },
      [self](unsub_atom, const fanout_sink_ptr& sink) { on_unsub(self, sink); },
      [self](committed_atom, std::uint64_t token, const std::string& error) {
        on_committed(self, token, error);
      },
      [self](trim_atom) { on_trim(self); },
      [self](moved_atom) { on_moved(self); },
      [self](adopt_atom, const stream_handoff_ptr& h) { on_adopt(self, h); },
      [self](adopted_atom, const std::string& error) { on_adopted(self, error); },
      [self](replicated_atom, std::uint64_t seq) {
        auto& st = self->state;
        if (seq <= st.replicated) return;
        st.replicated = seq;
        settle(self);
      },
      [self](fenced_atom, const std::string& member) { on_fenced(self, member); },
      [self](hold_atom, const std::string& why) {
        auto& st = self->state;
        if (!st.awaiting || st.adopting) return;
        if (st.hold_reason.empty())
          logging::warn("stream.held", {{"stream", st.cfg.stream.name}, {"reason", why}});
        st.hold_reason = why;
        std::vector<publish_request_ptr> publishes;
        publishes.swap(st.held_publishes);
        for (auto& p : publishes) on_publish(self, p);
      },
      [self](writable_atom, bool ok, bool soon, const std::string& why) {
        auto& st = self->state;
        st.writable = ok;
        st.writable_soon = soon;
        st.unwritable = why;
        if (ok || !soon) release_unwritable(self);
      },
      [self](term_atom, std::uint64_t term) {
        auto& st = self->state;
        if (term <= st.term) return;
        st.term = term;
        if (st.meta) st.meta->term = term;
      },
      [self](confirmed_atom, bool confirmed) {
        auto& st = self->state;
        st.confirmed = confirmed;
        if (!confirmed || st.moved) return;
        std::vector<fetch_request_ptr> held;
        held.swap(st.held_ahead);
        for (auto& f : held) on_fetch(self, f, true);
      },
      [self](check_term_atom, std::uint64_t term, const std::string& member) {
        on_check_term(self, term, member);
      },
      [self](stall_atom) { on_stall(self); },
      [self](idle_atom) {
        auto& st = self->state;
        st.idle_armed = false;
        // Still handing over: ask again once that settled.
        if (st.awaiting && !st.moved) return arm_idle(self, st.cfg.unknown_grace);
        release_if_idle(self);
      },
      [self](quiesce_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (st.pending.empty() && !st.awaiting) return true;
        auto rp = self->make_response_promise<bool>();
        st.quiesce_waiters.push_back(rp);
        return rp;
      },
  };
}

}  // namespace tidings::actors
