#include "cluster/log_shipper.hpp"

#include <algorithm>
#include <optional>

#include "cluster/cluster_view.hpp"
#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

using self_ptr = shipper_actor::stateful_pointer<shipper_state>;
using phase = shipper_state::phase;
using follower = shipper_state::follower;

constexpr auto min_pause = std::chrono::milliseconds(100);
// Writes the hub ships are sent once the shipper's mailbox holds no more
// of them (flush_atom goes behind the ships already there): under load
// one append carries every write that arrived meanwhile (one message, one
// parse and one store write on the follower instead of one per publish),
// idle it carries one write at once. No write waits for an answer to be
// coalesced, unless this many appends are out to its follower already.
constexpr unsigned max_live_appends = 8;
constexpr auto max_pause = std::chrono::milliseconds(2000);

const char* phase_name(phase p) {
  switch (p) {
    case phase::probing:
      return "probing";
    case phase::catching_up:
      return "catching_up";
    case phase::in_sync:
      return "in_sync";
    case phase::releasing:
      return "releasing";
  }
  return "?";
}

// What the admin views show of this stream's replication.
void publish_state(self_ptr self) {
  auto& st = self->state;
  replication_info info;
  info.role = "owner";
  info.by = self->address();
  info.term = st.meta.term;
  info.head = st.shipped;
  info.acknowledged = st.quorum ? st.quorum->acknowledged() : st.shipped;
  info.in_sync = true;
  for (const auto& [id, f] : st.followers)
    info.followers.push_back({id, phase_name(f.at), st.quorum ? st.quorum->confirmed(id) : 0});
  if (st.record) {
    info.leader = st.record->leader;
    info.leader_epoch = st.record->leader_epoch;
    info.isr = st.record->isr;
  }
  st.cfg.view->set_replication(st.cfg.stream, std::move(info));
}

// How far the record lets this leader acknowledge: what every ISR member
// holds durably, while the record names it leader (ADR 0021).
std::uint64_t record_bound(const shipper_state& st) {
  if (!st.cfg.records) return st.shipped;
  if (!st.record) return 0;
  std::map<core::member_id, std::uint64_t> ends;
  ends[st.self_id] = st.shipped;  // the hub acknowledges only what is durable here
  for (const auto& m : st.record->isr)
    if (m != st.self_id) ends[m] = st.quorum && st.quorum->has(m) ? st.quorum->confirmed(m) : 0;
  return core::acknowledgeable(*st.record, st.self_id, st.record->leader_epoch, ends, st.cfg.min_insync);
}

void report(self_ptr self) {
  auto& st = self->state;
  if (!st.quorum || st.fenced) return;
  auto ack = std::min(st.quorum->acknowledged(), record_bound(st));
  // Only as far as a follower answered us after it, unless this node is
  // alone with nobody lost (a cluster shrunk by drains): followers that
  // went away since a write was shipped do not make it acknowledged. The
  // record does that job when there is one: every member that could be
  // elected instead is in its ISR, and confirmed the write (record_bound).
  if (!st.alone && !st.cfg.records) ack = std::min(ack, st.evidence);
  if (ack > st.reported) {
    st.reported = ack;
    self->send(st.cfg.hub, actors::replicated_atom::value, ack);
    // The admin view's `acknowledged` follows (once per quorum round, not
    // per event: group commits batch them).
    publish_state(self);
  }
}

// A stream with followers configured but none reachable while members are
// lost may be the cut-off side of a split: it takes no writes (ADR 0017).
// A numeric write quorum also needs that many followers in sync.
void report_writable(self_ptr self) {
  auto& st = self->state;
  // With the record, its ISR is what counts: copies in sync that it does
  // not list yet cannot be elected, so they do not make min-insync.
  const std::size_t copies = st.cfg.records ? (st.record ? st.record->isr.size() : 0)
                                            : 1 + (st.quorum ? st.quorum->in_sync_count() : 0);
  const bool enough = copies >= st.cfg.min_insync;
  bool ok = !st.cut_off && st.quorum && st.quorum->can_acknowledge() && enough;
  // Not yet, but soon: a follower this node reaches is being brought into
  // sync, or is in sync and about to be listed in the record (publishes
  // wait for it rather than fail at once).
  bool soon = st.cfg.records && (!st.record || st.record_busy);
  for (const auto& [id, f] : st.followers) {
    if (f.node && (f.at == phase::probing || f.at == phase::catching_up)) soon = true;
    if (st.record && st.quorum && st.quorum->in_sync(id) && !st.record->in_isr(id)) soon = true;
  }
  // min-insync first: it is the rule (ADR 0021); being cut off is one way
  // to fall short of it.
  std::string why;
  if (!enough)
    why = std::to_string(copies) + " of the " + std::to_string(st.cfg.min_insync) +
          " copies min-insync requires are in sync (a follower is catching up, or none is reachable); retry";
  else if (st.cut_off)
    why =
        "no follower of this stream is reachable and members are lost: this node may be cut off from "
        "the cluster; retry";
  else if (!ok)
    why = "fewer followers are in sync than the write quorum (" + std::to_string(*st.cfg.write_quorum) +
          ") needs; retry";
  soon = !ok && !st.cut_off && soon;
  if (st.writable_sent == ok && st.unwritable_sent == why && st.soon_sent == soon) return;
  if (!ok && !soon)
    logging::warn("replication.unwritable", {{"stream", st.cfg.stream.name}, {"reason", why}});
  st.writable_sent = ok;
  st.unwritable_sent = why;
  st.soon_sent = soon;
  self->send(st.cfg.hub, actors::writable_atom::value, ok, soon, why);
}

// Tells the hub whether every follower has answered in its term.
void report_confirmed(self_ptr self) {
  auto& st = self->state;
  bool confirmed = st.unconfirmed.empty();
  if (st.confirmed_sent == confirmed) return;
  st.confirmed_sent = confirmed;
  self->send(st.cfg.hub, actors::confirmed_atom::value, confirmed);
}

proto::ReplicaAppend append_header(const shipper_state& st) {
  proto::ReplicaAppend a;
  a.set_tenant(st.cfg.stream.tenant);
  a.set_stream(st.cfg.stream.name);
  a.set_owner(st.self_id);
  a.set_term(st.meta.term);
  a.set_epoch(st.meta.epoch);
  a.set_first_seq(st.meta.first_seq);
  a.set_retention_count(st.meta.retention_count);
  a.set_retention_age_ms(st.meta.retention_age_ms);
  a.set_created_ms(st.meta.created_ms);
  a.set_base_term(st.base.term);
  a.set_base_owner(st.base.owner);
  a.set_base_head(st.base.head);
  return a;
}

// What a reply answers: the shipped head and the time when it was sent.
struct sent_mark {
  std::uint64_t shipped = 0;
  caf::actor_clock::time_point at;
};

void on_reply(self_ptr self, const std::string& id, std::uint64_t generation, bool catch_up, sent_mark sent,
              const proto::ReplicaReply& r);
void on_failure(self_ptr self, const std::string& id, std::uint64_t generation, const std::string& why);

// Answers to writes sent before this are moot, and no live append is out.
void next_generation(follower& f) {
  ++f.generation;
  f.out = 0;
  f.queued.clear();
}

// `live_head`: an append of shipped writes up to that seq, counted in
// `out` until answered.
void send(self_ptr self, const std::string& id, follower& f, proto::ReplicaAppend a, bool catch_up,
          std::optional<std::uint64_t> live_head = std::nullopt) {
  auto& st = self->state;
  if (!f.node) return;  // listed but not connected: probed once it is
  a.set_follower_incarnation(f.incarnation);
  if (catch_up) f.busy = true;
  const bool live = live_head.has_value();
  if (live) ++f.out;
  auto generation = f.generation;
  sent_mark sent{live_head.value_or(st.shipped), self->clock().now()};
  self->request(f.node, st.cfg.request_timeout, replicate_atom::value, a.SerializeAsString())
      .then(
          [self, id, generation, catch_up, live, sent](const std::string& bytes) {
            proto::ReplicaReply r;
            if (!r.ParseFromString(bytes)) return on_failure(self, id, generation, "unreadable reply");
            auto& st = self->state;
            if (auto it = st.followers.find(id);
                live && it != st.followers.end() && it->second.generation == generation && it->second.out > 0)
              --it->second.out;
            on_reply(self, id, generation, catch_up, sent, r);
          },
          [self, id, generation](caf::error& err) {
            on_failure(self, id, generation, self->system().render(err));
          });
}

void probe(self_ptr self, const std::string& id);

// The queued writes (consecutive, as the hub shipped them) in as few
// appends as they fit, unless max_live_appends are out already: then the
// next answer sends them. One append holds the writes of one epoch, up to
// a catch-up chunk of events; a write that starts the follower's copy goes
// alone (a reset must begin at the log's first seq, which retention moves
// with every write).
void flush(self_ptr self, const std::string& id, follower& f) {
  auto& st = self->state;
  while (!f.queued.empty() && f.out < max_live_appends && f.at == phase::in_sync && !st.fenced) {
    const auto& first = *f.queued.front();
    // A follower with another epoch gets the log from its start: a new
    // stream's first write, or its first write after a fresh epoch.
    bool reset = f.epoch != first.meta.epoch;
    if (reset && first.prev_seq + 1 != first.meta.first_seq) {
      // Cannot start its copy from here: catch it up instead.
      st.quorum->set_in_sync(id, false);
      return probe(self, id);
    }
    std::size_t n = 1;
    std::size_t events = first.events.size();
    while (!reset && n < f.queued.size() && f.queued[n]->meta.epoch == first.meta.epoch &&
           events + f.queued[n]->events.size() <= st.cfg.chunk_events)
      events += f.queued[n++]->events.size();
    const auto& last = *f.queued[n - 1];
    auto a = append_header(st);
    a.set_epoch(first.meta.epoch);
    a.set_prev_seq(first.prev_seq);
    a.set_first_seq(last.meta.first_seq);
    a.set_synced(true);
    a.set_reset(reset);
    for (std::size_t i = 0; i < n; ++i) {
      add_events(a, f.queued[i]->events);
      add_keys(a, f.queued[i]->idempotency);
    }
    const auto head = last.meta.head_seq;
    f.epoch = first.meta.epoch;
    f.queued.erase(f.queued.begin(), f.queued.begin() + static_cast<std::ptrdiff_t>(n));
    send(self, id, f, std::move(a), false, head);
  }
}

void ship_to(self_ptr self, follower& f, const actors::replica_batch_ptr& batch) {
  f.queued.push_back(batch);
  if (self->state.flush_due) return;
  self->state.flush_due = true;
  self->send(self, flush_atom::value);
}

void fence(self_ptr self, const std::string& by);
void sync_isr(self_ptr self);
void catch_up(self_ptr self, const std::string& id);

// One ask of the record keeper at a time; no answer: asked again after
// `pause` (isr_atom).
void ask_record(self_ptr self, std::shared_ptr<record_request> ask, std::chrono::milliseconds pause,
                const std::function<void(const record_answer&)>& answered) {
  auto& st = self->state;
  st.record_busy = true;
  self->request(*st.cfg.records, std::chrono::seconds(10), record_atom::value,
                record_request_ptr(std::move(ask)))
      .then(
          [self, answered](const record_answer_ptr& a) {
            self->state.record_busy = false;
            answered(*a);
          },
          [self, pause](caf::error&) {
            self->state.record_busy = false;
            self->delayed_send(self, pause, isr_atom::value);
          });
}

// The record as the keeper answered it: what acknowledgements and
// writability follow now, and the next change of the ISR.
void took_record(self_ptr self, const std::optional<core::stream_record>& record) {
  auto& st = self->state;
  st.record = record;
  publish_state(self);
  report_writable(self);
  report(self);
  sync_isr(self);
  // Catch-ups that waited for a member to leave the ISR go on.
  for (const auto& [id, f] : st.followers)
    if (st.record && !f.busy && (f.at == phase::probing || f.at == phase::catching_up) &&
        !st.record->in_isr(id))
      catch_up(self, id);
}

// Brings the record's ISR to the followers the quorum waits for, one
// compare-and-swap at a time (ADR 0021): one that fell out leaves the
// record before anything is acknowledged without it (record_bound), and
// one in sync joins it once it holds what the leader must have it hold.
void sync_isr(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.records || !st.record || st.record_busy || st.fenced || !st.quorum) return;
  std::vector<core::member_id> in_sync;
  std::map<core::member_id, std::uint64_t> ends;
  for (const auto& [id, f] : st.followers) {
    if (st.quorum->in_sync(id)) in_sync.push_back(id);
    ends[id] = st.quorum->confirmed(id);
  }
  // What a member must hold to come in: the log as this leader was elected
  // with it, and everything acknowledged since.
  const auto must_hold = std::max(core::elected_end(*st.record), st.reported);
  auto step = core::next_isr_step(*st.record, st.self_id, in_sync, ends, must_hold);
  if (step.what == core::isr_step::kind::none) return;
  auto ask = std::make_shared<record_request>();
  ask->what =
      step.what == core::isr_step::kind::shrink ? record_request::kind::shrink : record_request::kind::expand;
  ask->stream = st.cfg.stream;
  ask->me = st.self_id;
  ask->member = step.member;
  ask->at_epoch = st.record->leader_epoch;
  ask->member_end = ends[step.member];
  ask->must_hold = must_hold;
  ask_record(self, std::move(ask), std::chrono::milliseconds(200), [self](const record_answer& a) {
    auto& st = self->state;
    if (a.deposed) return fence(self, a.record ? a.record->leader : std::string{});
    if (!a.ok) {
      logging::warn("replication.isr_change_failed", {{"stream", st.cfg.stream.name}, {"error", a.reason}});
      return void(self->delayed_send(self, std::chrono::milliseconds(200), isr_atom::value));
    }
    took_record(self, a.record);
  });
  report_writable(self);
}

// The record at the start of this leadership: the node made sure it names
// this node before the hub began (node_handoff.cpp); a record that says
// otherwise (another member won meanwhile) fences the hub.
void read_record(self_ptr self) {
  auto& st = self->state;
  auto ask = std::make_shared<record_request>();
  ask->what = record_request::kind::read;
  ask->stream = st.cfg.stream;
  ask_record(self, std::move(ask), std::chrono::milliseconds(500), [self](const record_answer& a) {
    auto& st = self->state;
    if (a.ok && a.record && a.record->leader == st.self_id) return took_record(self, a.record);
    if (a.ok && a.record) return fence(self, a.record->leader);
    logging::warn("replication.record_unsettled",
                  {{"stream", st.cfg.stream.name}, {"reason", a.ok ? "the stream has no record" : a.reason}});
    self->delayed_send(self, std::chrono::milliseconds(500), isr_atom::value);
  });
}

void arm_lag_check(self_ptr self, caf::actor_clock::duration_type after);

void mark_in_sync(self_ptr self, const std::string& id, follower& f) {
  auto& st = self->state;
  if (f.at != phase::in_sync)
    logging::debug("replication.follower_in_sync",
                   {{"stream", st.cfg.stream.name}, {"node", id}, {"head", st.shipped}});
  f.at = phase::in_sync;
  f.pause = std::chrono::milliseconds(0);
  // Coming in, it gets a full replica_lag to confirm what it is sent now;
  // one that never left the in-sync set (a timeout, then a probe) keeps
  // the time it last held the head.
  if (!st.quorum->in_sync(id)) f.caught_up_at = self->clock().now();
  st.quorum->set_in_sync(id, true);
  arm_lag_check(self, st.cfg.replica_lag);
  publish_state(self);
  report_writable(self);
  sync_isr(self);
}

void pause_then_probe(self_ptr self, const std::string& id, follower& f);

// The next step of bringing follower `id` to this node's log.
void catch_up(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto it = st.followers.find(id);
  if (it == st.followers.end()) return;
  auto& f = it->second;
  if (f.busy || f.at == phase::releasing || f.at == phase::in_sync || st.fenced) return;
  if (st.meta.epoch == 0) {
    // No log yet: nothing to copy; the first write starts it.
    return mark_in_sync(self, id, f);
  }
  auto a = append_header(st);
  bool reset = f.epoch != st.meta.epoch || f.head + 1 < st.meta.first_seq || f.head > st.shipped;
  if (reset && st.cfg.records && (!st.record || st.record->in_isr(id))) {
    // A reset rewrites its copy from the start: an ISR member's copy must
    // not be taken apart while the record still says it can be elected.
    // The ISR shrinks first (took_record resumes this catch-up).
    if (st.quorum->in_sync(id)) st.quorum->set_in_sync(id, false);
    return sync_isr(self);
  }
  std::uint64_t after = reset ? st.meta.first_seq - 1 : f.head;
  if (!reset && after == st.shipped) {
    // It holds everything: live from here, and it knows.
    mark_in_sync(self, id, f);
    a.set_prev_seq(after);
    a.set_synced(true);
    return send(self, id, f, a, false);
  }
  if (!reset && !st.window.empty() && st.window.front()->prev_seq <= after) {
    // The rest is still in memory: send it as the live writes it was.
    mark_in_sync(self, id, f);
    for (const auto& b : st.window)
      if (b->meta.head_seq > after) f.queued.push_back(b);
    return flush(self, id, f);
  }
  // From the store, up to what is durable here and not in the window.
  auto up_to = std::min(st.local, st.window.empty() ? st.shipped : st.window.front()->prev_seq);
  if (after >= up_to) return;  // local() brings more
  std::vector<persistence::stored_event> events;
  if (auto s = st.cfg.store->read_events(st.meta.id, after, up_to, st.cfg.chunk_events, &events); !s.ok()) {
    logging::error("replication.read_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
    return;
  }
  if (events.empty() || events.front().seq != after + 1) {
    if (reset) {
      // The store does not start where the log's meta says: try again
      // later rather than send a copy with a hole.
      logging::error("replication.log_start_missing",
                     {{"stream", st.cfg.stream.name}, {"first_seq", st.meta.first_seq}});
      return pause_then_probe(self, id, f);
    }
    // Trimmed meanwhile: start its copy again from what is retained.
    f.epoch = 0;
    return catch_up(self, id);
  }
  a.set_prev_seq(after);
  a.set_reset(reset);
  add_events(a, events);
  if (!f.keys_sent) {
    // The keys of the epoch it has not seen, so a retry is answered there too.
    std::vector<std::pair<std::string, persistence::idempotency_record>> keys;
    const auto unseen = [epoch = st.meta.epoch, after](const persistence::idempotency_record& rec) {
      return rec.epoch == epoch && rec.first_seq > after;
    };
    if (st.cfg.store->list_idempotency(st.meta.id, 10 * st.cfg.chunk_events, unseen, &keys).ok())
      add_keys(a, keys);
    f.keys_sent = true;
  }
  if (f.at == phase::probing) f.at = phase::catching_up;
  send(self, id, f, a, true);
}

// Asks `id` where its copy stands (an empty append at our head); its
// answer starts the catch-up.
void probe(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto it = st.followers.find(id);
  if (it == st.followers.end() || st.fenced) return;
  auto& f = it->second;
  next_generation(f);
  f.busy = false;
  f.keys_sent = false;
  if (f.at != phase::releasing) f.at = phase::probing;
  auto a = append_header(st);
  a.set_prev_seq(st.shipped);
  send(self, id, f, a, true);
}

void pause_then_probe(self_ptr self, const std::string& id, follower& f) {
  f.pause = std::clamp(f.pause * 2, min_pause, max_pause);
  f.busy = true;  // nothing else goes out until the probe
  next_generation(f);
  self->delayed_send(self, f.pause, retry_atom::value, id, f.generation);
}

void fence(self_ptr self, const std::string& by) {
  auto& st = self->state;
  if (st.fenced) return;
  st.fenced = true;
  logging::warn("replication.fenced", {{"stream", st.cfg.stream.name}, {"term", st.meta.term}, {"by", by}});
  self->send(st.cfg.hub, actors::fenced_atom::value, by);
}

// Followers dropped as lost and seen again in one view change keep their
// old confirmation; a paused owner that resumes is such a case, and its
// followers may have moved on to a newer term. Probing them all again
// settles it: they answer in this term (confirmed) or fence this node.
void reconfirm(self_ptr self) {
  auto& st = self->state;
  if (st.fenced) return;
  for (const auto& [id, f] : st.followers) {
    st.unconfirmed.insert(id);
    probe(self, id);
  }
  st.confirmed_sent.reset();  // the hub waits for an answer, even an unchanged one
  report_confirmed(self);
}

void on_reply(self_ptr self, const std::string& id, std::uint64_t generation, bool catch_up_reply,
              sent_mark sent, const proto::ReplicaReply& r) {
  const auto shipped_then = sent.shipped;
  auto& st = self->state;
  auto it = st.followers.find(id);
  if (it == st.followers.end() || st.fenced) return;
  auto& f = it->second;
  if (generation != f.generation) return;
  if (catch_up_reply) f.busy = false;
  if (r.status() == proto::ReplicaReply::OK || r.status() == proto::ReplicaReply::GAP) {
    // It took this term (or will, once caught up): not a newer one, and
    // it sees this node as the owner.
    st.unconfirmed.erase(id);
    st.evidence = std::max(st.evidence, shipped_then);
    report_confirmed(self);
  }
  switch (r.status()) {
    case proto::ReplicaReply::OK:
      f.epoch = r.epoch();
      f.head = r.head();
      // Only as far as what it was sent: a copy that holds more (seqs of
      // an earlier life of this log, past what this node holds) vouches
      // for nothing beyond, until the newer term has cut those off.
      if (r.epoch() == st.meta.epoch) st.quorum->confirm(id, std::min(r.head(), shipped_then));
      if (r.epoch() == st.meta.epoch && r.head() >= shipped_then)
        f.caught_up_at = std::max(f.caught_up_at, sent.at);
      // A probe or a step that did not reach our head: go on.
      if (f.at != phase::in_sync)
        catch_up(self, id);
      else
        flush(self, id, f);
      report(self);
      sync_isr(self);
      break;
    case proto::ReplicaReply::GAP:
      // It says itself that it is behind: nothing waits for it any more.
      f.epoch = r.epoch();
      f.head = r.head();
      st.quorum->set_in_sync(id, false);
      next_generation(f);  // answers to writes sent before this are moot
      f.busy = false;
      f.at = phase::catching_up;
      f.keys_sent = false;
      publish_state(self);
      report_writable(self);
      catch_up(self, id);
      report(self);
      sync_isr(self);
      break;
    case proto::ReplicaReply::FENCED: {
      auto m = st.cfg.view->current();
      const auto& writer = r.term_owner();
      // Another member's newer term: step down and take its log, from the
      // writer, or while that one is lost, from this follower, which holds
      // a copy of it. Going past a lost writer's term would drop what it
      // acknowledged: a paused owner that resumes may see this follower
      // before it sees the member that took over (ADR 0017).
      if (writer != st.self_id) return fence(self, m->node_of(writer) ? writer : id);
      // A term this node reached before (then restarted): go past it.
      st.meta.term = std::max(st.meta.term, r.term()) + 1;
      logging::info("replication.term_raised", {{"stream", st.cfg.stream.name}, {"term", st.meta.term}});
      self->send(st.cfg.hub, actors::term_atom::value, st.meta.term);
      for (auto& [other, g] : st.followers) probe(self, other);
      break;
    }
    case proto::ReplicaReply::REFUSED:
      logging::debug("replication.refused",
                     {{"stream", st.cfg.stream.name}, {"node", id}, {"why", r.error()}});
      if (f.at == phase::in_sync) f.at = phase::probing;
      pause_then_probe(self, id, f);
      break;
    default:
      on_failure(self, id, generation, "unknown reply status");
  }
}

// No answer: the follower stays required (it may hold the writes); it is
// probed again after a pause, and is dropped only when it is lost.
void on_failure(self_ptr self, const std::string& id, std::uint64_t generation, const std::string& why) {
  auto& st = self->state;
  auto it = st.followers.find(id);
  if (it == st.followers.end() || st.fenced) return;
  auto& f = it->second;
  if (generation != f.generation) return;
  logging::warn("replication.no_answer", {{"stream", st.cfg.stream.name}, {"node", id}, {"error", why}});
  if (f.at == phase::in_sync) f.at = phase::probing;
  pause_then_probe(self, id, f);
}

void release(self_ptr self, const std::string& id, follower& f) {
  auto& st = self->state;
  f.at = phase::releasing;
  st.unconfirmed.erase(id);
  report_confirmed(self);
  next_generation(f);
  proto::ReplicaRelease r;
  r.set_tenant(st.cfg.stream.tenant);
  r.set_stream(st.cfg.stream.name);
  r.set_owner(st.self_id);
  self->request(f.node, st.cfg.request_timeout, release_atom::value, r.SerializeAsString())
      .then(
          [self, id](const std::string&) {
            // It dropped its copy: nothing waits for it.
            auto& st = self->state;
            if (auto it = st.followers.find(id);
                it != st.followers.end() && it->second.at == phase::releasing) {
              st.followers.erase(it);
              st.quorum->remove(id);
              st.unconfirmed.erase(id);
              report_confirmed(self);
              report_writable(self);
              publish_state(self);
              report(self);
              sync_isr(self);
            }
          },
          [](caf::error&) {});  // kept until it answers or is lost (the next view)
}

// Followers as the membership says now.
void refresh(self_ptr self) {
  auto& st = self->state;
  if (!st.begun || st.fenced) return;
  auto m = st.cfg.view->current();
  st.self_id = m->self_id;
  auto wanted = core::followers_of(m->live, st.self_id, st.cfg.stream.tenant, st.cfg.stream.name,
                                   st.cfg.replication_factor - 1);
  for (auto it = st.followers.begin(); it != st.followers.end();) {
    auto node = m->node_of(it->first);
    bool keep = std::find(wanted.begin(), wanted.end(), it->first) != wanted.end();
    bool listed = std::binary_search(m->holders.begin(), m->holders.end(), it->first);
    if (!node && listed) {
      // A member (the record lists it) this node has no connection to: it
      // stays required, since it may hold what was shipped (ADR 0022);
      // writes wait until it is reached again or the record drops it.
      if (it->second.node) {
        logging::warn("replication.follower_unreachable",
                      {{"stream", st.cfg.stream.name}, {"node", it->first}});
        it->second.node = nullptr;
        next_generation(it->second);
        it->second.busy = false;
        if (it->second.at == phase::in_sync) it->second.at = phase::probing;
      }
      ++it;
      continue;
    }
    if (!node) {
      // Lost: a follower that is gone waits for nothing (and holds nothing we count).
      logging::info("replication.follower_lost", {{"stream", st.cfg.stream.name}, {"node", it->first}});
      st.quorum->remove(it->first);
      st.unconfirmed.erase(it->first);
      it = st.followers.erase(it);
      continue;
    }
    // Kept current from the view here, not looked up per append.
    it->second.incarnation = m->incarnation_of(it->first);
    if (node != it->second.node) {
      // It restarted: a new life, probed afresh (its copy may be behind).
      it->second.node = node;
      if (keep) {
        st.unconfirmed.insert(it->first);
        probe(self, it->first);
      }
    }
    if (!keep && it->second.at != phase::releasing) release(self, it->first, it->second);
    ++it;
  }
  for (const auto& id : wanted) {
    if (st.followers.contains(id)) continue;
    auto node = m->node_of(id);
    if (!node) continue;
    follower f;
    f.node = node;
    f.incarnation = m->incarnation_of(id);
    st.followers.emplace(id, std::move(f));
    st.quorum->add(id);
    st.unconfirmed.insert(id);
    probe(self, id);
  }
  report_confirmed(self);
  // With the record, a leader that may be cut off cannot shrink the ISR
  // (its compare-and-swap needs etcd and its leadership), so min-insync
  // alone decides; the rule for being cut off is ADR 0017's, without one.
  st.cut_off = !st.cfg.records && wanted.empty() && st.cfg.replication_factor >= 2 && !m->lost.empty();
  st.alone = wanted.empty() && m->lost.empty();
  report_writable(self);
  publish_state(self);
  report(self);
  sync_isr(self);
}

void arm_lag_check(self_ptr self, caf::actor_clock::duration_type after) {
  auto& st = self->state;
  // Without a record a follower is never dropped on a timeout: nothing
  // would then stop it from taking over with what it holds (ADR 0017).
  if (!st.cfg.records || st.lag_check_armed || st.fenced) return;
  st.lag_check_armed = true;
  st.lag_check_due = self->clock().now() + after;
  self->delayed_send(self, after, tick_atom::value);
}

// Drops from the quorum (and so, through sync_isr, from the record's ISR)
// every member that has not held the shipped head for replica_lag: it no
// longer holds writes back. It is probed again after a pause and comes
// back through the catch-up like any follower that fell behind.
void check_lag(self_ptr self) {
  auto& st = self->state;
  st.lag_check_armed = false;
  if (st.fenced || !st.quorum) return;
  const auto now = self->clock().now();
  // Late by a quarter of the lag or more: this node itself stalled (a
  // pause, an overload), and the followers' answers may still wait in
  // its mailbox. They get their turn before anyone is judged.
  if (now - st.lag_check_due >= st.cfg.replica_lag / 4) return arm_lag_check(self, st.cfg.replica_lag / 4);
  std::optional<caf::actor_clock::duration_type> next;
  bool dropped = false;
  for (auto& [id, f] : st.followers) {
    if (!st.quorum->in_sync(id) || st.quorum->confirmed(id) >= st.shipped) continue;
    const auto behind = now - f.caught_up_at;
    if (behind < st.cfg.replica_lag) {
      auto left = st.cfg.replica_lag - behind;
      next = next ? std::min(*next, left) : left;
      continue;
    }
    logging::warn("replication.follower_lagging",
                  {{"stream", st.cfg.stream.name},
                   {"node", id},
                   {"head", st.shipped},
                   {"holds", st.quorum->confirmed(id)},
                   {"behind_ms", std::chrono::duration_cast<std::chrono::milliseconds>(behind).count()}});
    st.quorum->set_in_sync(id, false);
    dropped = true;
    if (f.at == phase::releasing) continue;  // on its way out: no probe
    if (f.at == phase::in_sync) f.at = phase::probing;
    pause_then_probe(self, id, f);
  }
  if (next) arm_lag_check(self, *next);
  if (!dropped) return;
  publish_state(self);
  report_writable(self);
  report(self);
  sync_isr(self);
}

void on_begin(self_ptr self, const actors::replica_start_ptr& start) {
  auto& st = self->state;
  st.begun = true;
  st.meta = start->meta;
  st.base = start->base;
  st.shipped = st.local = st.reported = st.evidence = st.meta.head_seq;
  st.quorum.emplace(st.meta.head_seq, st.cfg.write_quorum);
  logging::debug("replication.begun",
                 {{"stream", st.cfg.stream.name}, {"term", st.meta.term}, {"head", st.meta.head_seq}});
  refresh(self);
  if (st.cfg.records) read_record(self);
}

void on_ship(self_ptr self, const actors::replica_batch_ptr& batch) {
  auto& st = self->state;
  if (!st.begun || st.fenced) return;
  auto term = st.meta.term;
  if (batch->meta.epoch != st.meta.epoch) {
    // A new stream (or epoch) starts: the window of the old one is moot.
    st.window.clear();
    st.local = batch->prev_seq;
  }
  // Followers that hold everything shipped so far are caught up as of now.
  const auto now = self->clock().now();
  for (auto& [id, f] : st.followers)
    if (st.quorum->in_sync(id) && st.quorum->confirmed(id) >= st.shipped) f.caught_up_at = now;
  st.meta = batch->meta;
  st.meta.term = std::max(term, batch->meta.term);
  st.shipped = batch->meta.head_seq;
  st.window.push_back(batch);
  if (!batch->events.empty()) st.quorum->shipped(batch->events.back().seq);
  for (auto& [id, f] : st.followers)
    if (f.at == phase::in_sync) ship_to(self, f, batch);
  // A follower that just fell out (ship_to) is probed now.
  for (auto& [id, f] : st.followers)
    if (f.at == phase::probing && !f.busy) probe(self, id);
  report(self);
  arm_lag_check(self, st.cfg.replica_lag);
}

void on_local(self_ptr self, std::uint64_t seq) {
  auto& st = self->state;
  st.local = std::max(st.local, seq);
  while (!st.window.empty() && st.window.front()->meta.head_seq <= st.local) st.window.pop_front();
  for (auto& [id, f] : st.followers)
    if (f.at == phase::catching_up && !f.busy) catch_up(self, id);
}

}  // namespace

shipper_actor::behavior_type log_shipper(shipper_actor::stateful_pointer<shipper_state> self,
                                         shipper_config cfg) {
  self->state.cfg = std::move(cfg);
  self->attach_functor([view = self->state.cfg.view, key = self->state.cfg.stream, addr = self->address()] {
    view->erase_replication(key, addr);
  });
  return {
      [self](actors::begin_atom, const actors::replica_start_ptr& start) { on_begin(self, start); },
      [self](actors::ship_atom, const actors::replica_batch_ptr& batch) { on_ship(self, batch); },
      [self](actors::local_atom, std::uint64_t seq) { on_local(self, seq); },
      [self](actors::reconfirm_atom) { reconfirm(self); },
      [self](view_atom) { refresh(self); },
      [self](retry_atom, const std::string& id, std::uint64_t generation) {
        auto& st = self->state;
        auto it = st.followers.find(id);
        if (it == st.followers.end() || it->second.generation != generation) return;
        probe(self, id);
      },
      [self](tick_atom) { check_lag(self); },
      [self](flush_atom) {
        self->state.flush_due = false;
        for (auto& [id, f] : self->state.followers) flush(self, id, f);
      },
      [self](isr_atom) {
        auto& st = self->state;
        if (st.fenced || st.record_busy) return;
        if (!st.record) return read_record(self);
        sync_isr(self);
      },
  };
}

}  // namespace tidings::cluster
