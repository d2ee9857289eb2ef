// Streams change owners with their logs (ADR 0015): a new owner's hub holds
// its requests and pulls the log from the stream's previous holder, chunk by
// chunk; the holder answers once its moved hub has no write in flight, and
// drops its copy when the new owner says the log is durable. A draining node
// (and any node after a membership change) asks the new owners of what its
// store still holds to pull it.

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = node_actor*;

constexpr std::size_t chunk_events = 1000;
// How long a new owner keeps asking a holder that does not see it as the
// owner yet (views converge within a gossip round) or is still ending the
// source or watch that writes the stream (a drain closes upstream
// connections first): giving up means a new epoch and a resync for every
// subscriber, so it waits well past either. And how long a drain waits for
// the new owners to take everything.
constexpr auto retry_for = std::chrono::seconds(10);
constexpr auto retry_every = std::chrono::milliseconds(100);
constexpr auto drain_for = std::chrono::seconds(15);

void claim_later(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
                 const std::string& why);
void succeed_then_adopt(self_ptr self, const std::shared_ptr<node_state::pull_job>& job,
                        std::shared_ptr<actors::stream_handoff> log);

void finish_pull(self_ptr self, std::uint64_t token, std::shared_ptr<actors::stream_handoff> log) {
  auto& st = self->state;
  auto it = st.pulls.find(token);
  if (it == st.pulls.end()) return;
  auto job = it->second;
  st.pulls.erase(it);
  if (job->claimed) {
    if (!log) return claim_later(self, job->stream, job->hub, job->holder_id + " did not hand the log over");
    return succeed_then_adopt(self, job, std::move(log));
  }
  if (log) {
    auto holder = job->holder;
    auto key = job->stream;
    auto epoch = log->meta.epoch;
    log->committed = [holder, key, epoch] {
      caf::anon_send(holder, taken_atom::value, key.tenant, key.name, epoch);
    };
    logging::info("cluster.stream_taken", {{"stream", key.name},
                                           {"from", job->holder_id},
                                           {"events", static_cast<std::uint64_t>(log->events.size())}});
  }
  if (!log) return caf::anon_send(job->hub, actors::adopt_atom::value, job->fallback);
  caf::anon_send(job->hub, actors::adopt_atom::value, actors::stream_handoff_ptr(std::move(log)));
}

// The holder may still answer: the record lists it and the job has time
// left. Going on without its log would serve a stale one.
bool holder_may_answer(const node_state& st, const node_state::pull_job& job) {
  return st.table.state(job.holder_id) == member_state::up &&
         std::chrono::steady_clock::now() < job.give_up_at;
}

// A holder the record lists but this node has no connection to (yet: a
// node that just registered again is still dialling) is waited for.
bool await_holder(self_ptr self, std::uint64_t token) {
  auto& st = self->state;
  auto job = st.pulls.at(token);
  if (auto h = st.handles.find(job->holder_id); h != st.handles.end()) {
    job->holder = h->second;
    return false;
  }
  if (holder_may_answer(st, *job)) {
    self->delayed_send(self, retry_every, retry_atom::value, token);
    return true;
  }
  logging::warn(
      "cluster.take_failed",
      {{"stream", job->stream.name}, {"holder", job->holder_id}, {"error", "no connection to the holder"}});
  finish_pull(self, token, nullptr);
  return true;
}

void ask_holder(self_ptr self, std::uint64_t token, std::uint64_t after_seq) {
  auto& st = self->state;
  if (await_holder(self, token)) return;
  auto job = st.pulls.at(token);
  proto::TakeRequest req;
  req.set_tenant(job->stream.tenant);
  req.set_stream(job->stream.name);
  req.set_requester(st.table.self().id);
  req.set_after_seq(after_seq);
  req.set_by_record(job->claimed);
  self->request(job->holder, st.cfg.request_timeout, take_atom::value, req.SerializeAsString())
      .then(
          [self, token](const std::string& bytes) {
            auto& st = self->state;
            auto it = st.pulls.find(token);
            if (it == st.pulls.end()) return;
            auto job = it->second;
            proto::TakeReply r;
            if (!parse(bytes, &r) || r.status() == proto::TakeReply::NONE) {
              // NONE halfway through (the holder lost its copy) is no log
              // at all, never a partial one.
              if (job->log) logging::warn("cluster.take_broken", {{"stream", job->stream.name}});
              return finish_pull(self, token, nullptr);
            }
            if (r.status() == proto::TakeReply::RETRY) {
              job->log.reset();  // the retry starts again from the beginning
              if (std::chrono::steady_clock::now() < job->give_up_at)
                return void(self->delayed_send(self, retry_every, retry_atom::value, token));
              logging::warn("cluster.take_refused",
                            {{"stream", job->stream.name}, {"holder", job->holder_id}});
              return finish_pull(self, token, nullptr);
            }
            if (!job->log) {
              job->log = std::make_shared<actors::stream_handoff>();
              for (auto& k : r.idempotency())
                job->log->idempotency.push_back(
                    {k.key(),
                     persistence::idempotency_record{r.epoch(), k.first_seq(), k.count(), k.time_ms()}});
              job->log->meta = meta_of(r, job->stream.tenant, job->stream.name);
            }
            append_events(r, job->log->events);
            if (r.more() && !job->log->events.empty())
              return ask_holder(self, token, job->log->events.back().seq);
            finish_pull(self, token, job->log);
          },
          [self, token](caf::error& err) {
            auto& st = self->state;
            auto it = st.pulls.find(token);
            if (it == st.pulls.end()) return;
            auto job = it->second;
            // A holder still listed is asked again (from the start) within
            // the job's time; one that is gone or past it: go on with what
            // this node has (the stream starts a new epoch if nothing;
            // subscribers resync).
            if (holder_may_answer(st, *job)) {
              job->log.reset();
              return void(self->delayed_send(self, retry_every, retry_atom::value, token));
            }
            logging::warn("cluster.take_failed", {{"stream", job->stream.name},
                                                  {"holder", job->holder_id},
                                                  {"error", self->system().render(err)}});
            finish_pull(self, token, nullptr);
          });
}

}  // namespace

// Up to `max` events of the stream's log after `after_seq`, from this
// node's store, with its meta.
std::string read_chunk(self_ptr self, const actors::stream_key& key, std::uint64_t after_seq,
                       std::size_t max) {
  auto& st = self->state;
  proto::TakeReply r;
  std::optional<persistence::stream_meta> meta;
  if (auto s = st.cfg.store->get_stream(key.tenant, key.name, &meta); !s.ok() || !meta) {
    r.set_status(proto::TakeReply::NONE);
    return r.SerializeAsString();
  }
  r.set_status(proto::TakeReply::LOG);
  r.set_epoch(meta->epoch);
  r.set_first_seq(meta->first_seq);
  r.set_head_seq(meta->head_seq);
  r.set_retention_count(meta->retention_count);
  r.set_retention_age_ms(meta->retention_age_ms);
  r.set_created_ms(meta->created_ms);
  r.set_term(meta->term);
  r.set_term_owner(meta->term_owner.empty() ? st.table.self().id : meta->term_owner);
  auto after = std::max(after_seq, meta->first_seq - 1);
  std::vector<persistence::stored_event> events;
  if (auto s = st.cfg.store->read_events(meta->id, after, meta->head_seq, max, &events); !s.ok()) {
    logging::error("cluster.take_read_failed", {{"stream", key.name}, {"error", s.message()}});
    r.set_status(proto::TakeReply::RETRY);
    return r.SerializeAsString();
  }
  // The keys go with the first chunk (bounded like a chunk).
  std::vector<std::pair<std::string, persistence::idempotency_record>> keys;
  const auto this_epoch = [epoch = meta->epoch](const persistence::idempotency_record& rec) {
    return rec.epoch == epoch;
  };
  if (after_seq == 0 && st.cfg.store->list_idempotency(meta->id, 10 * chunk_events, this_epoch, &keys).ok()) {
    for (auto& [k, rec] : keys) {
      auto* e = r.add_idempotency();
      e->set_key(k);
      e->set_first_seq(rec.first_seq);
      e->set_count(rec.count);
      e->set_time_ms(rec.time_ms);
    }
  }
  for (auto& e : events) {
    auto* w = r.add_events();
    w->set_seq(e.seq);
    w->set_path(e.ev.path);
    w->set_type(e.ev.type);
    w->set_data_json(e.ev.data_json);
    w->set_time_ms(e.ev.time_ms);
  }
  r.set_more(!events.empty() && events.back().seq < meta->head_seq);
  return r.SerializeAsString();
}

namespace {

void rebalance_now(self_ptr self);
void answer_take(self_ptr self, caf::response_promise rp, const actors::stream_key& key, std::uint64_t after);

}  // namespace

namespace {

// Replication (ADR 0017): a follower's copy whose owner is gone is the log,
// when the owner said it was whole; the stream goes on from it in the same
// epoch. Otherwise the log is pulled from the previous holder as before;
// when none answers, this node's own log is kept, but a follower's copy
// that cannot be shown whole is dropped for a new epoch (`fresh`).
// A pull of `key`'s log from `holder_id` for `hub`, with the time it may take.
std::shared_ptr<node_state::pull_job> start_pull(const actors::stream_key& key,
                                                 const actors::hub_handoff_actor& hub,
                                                 const std::string& holder_id) {
  auto job = std::make_shared<node_state::pull_job>();
  job->stream = key;
  job->hub = hub;
  job->holder_id = holder_id;
  job->give_up_at = std::chrono::steady_clock::now() + retry_for;
  return job;
}

// Registers the job and asks its holder for the first chunk.
void run_pull(self_ptr self, std::shared_ptr<node_state::pull_job> job) {
  auto token = self->state.next_token++;
  self->state.pulls.emplace(token, std::move(job));
  ask_holder(self, token, 0);
}

void claim(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
           const copy_status& copy);

void pull_with(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
               const copy_status& copy) {
  auto& st = self->state;
  if (st.cfg.view->has_record(key)) return claim(self, key, hub, copy);
  const bool follower_copy = copy.exists && copy.owner != st.table.self().id;
  auto m = st.cfg.view->current();
  bool owner_gone = !std::binary_search(m->holders.begin(), m->holders.end(), copy.owner);
  if (follower_copy && copy.in_sync && owner_gone) {
    logging::info("cluster.stream_taken_over", {{"stream", key.name},
                                                {"from", copy.owner},
                                                {"epoch", core::format_epoch(copy.epoch)},
                                                {"head", copy.head}});
    return caf::anon_send(hub, actors::adopt_atom::value, actors::stream_handoff_ptr{});
  }
  actors::stream_handoff_ptr fallback;
  if (follower_copy) {
    auto fresh = std::make_shared<actors::stream_handoff>();
    fresh->fresh = true;
    fallback = std::move(fresh);
  }
  auto holder_id = st.cfg.view->take_fence_hint(key);
  if (holder_id.empty() || st.table.state(holder_id) != member_state::up)
    holder_id = st.cfg.view->previous_holder(key.tenant, key.name);
  if (holder_id.empty() || st.table.state(holder_id) != member_state::up)
    return caf::anon_send(hub, actors::adopt_atom::value, fallback);
  auto job = start_pull(key, hub, holder_id);
  job->fallback = std::move(fallback);
  run_pull(self, std::move(job));
}

// ADR 0021: a new owner asks the record before it serves the stream. It
// leads on the log it has (the record names it, or it creates the record,
// or it is elected from the ISR: its copy holds everything acknowledged),
// pulls the log from the member that has it, or holds: with no in-sync
// replica alive, nothing is served as if it were whole.
void claim(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
           const copy_status& copy) {
  auto& st = self->state;
  auto m = st.cfg.view->current();
  auto ask = std::make_shared<record_request>();
  ask->what = record_request::kind::claim;
  ask->stream = key;
  ask->me = st.table.self().id;
  ask->has_copy = copy.exists;
  ask->my_end = copy.exists ? copy.head : 0;
  ask->live = m->holders;
  self->request(*st.cfg.view->records(), std::chrono::seconds(10), record_atom::value,
                record_request_ptr(std::move(ask)))
      .then(
          [self, key, hub, copy](const record_answer_ptr& a) {
            auto& st = self->state;
            using plan = core::claim_plan::kind;
            if (!a->ok || a->plan == plan::hold) return claim_later(self, key, hub, a->reason);
            if (a->plan == plan::pull) {
              auto job = start_pull(key, hub, a->from);
              job->claimed = true;
              job->leader_epoch = a->record ? a->record->leader_epoch : 0;
              return run_pull(self, std::move(job));
            }
            // lead: the record names this node. After a forced election
            // its copy goes on as the record's new log epoch.
            const auto forced = a->record ? a->record->log_epoch : 0;
            if (forced != 0 && copy.epoch != forced) {
              auto log = renumbered_copy(self, key, forced);
              if (!log) return claim_later(self, key, hub, "this node's copy could not be read");
              return caf::anon_send(hub, actors::adopt_atom::value,
                                    actors::stream_handoff_ptr(std::move(log)));
            }
            if (copy.exists && copy.owner != st.table.self().id)
              logging::info("cluster.stream_taken_over",
                            {{"stream", key.name},
                             {"from", copy.owner},
                             {"epoch", core::format_epoch(copy.epoch)},
                             {"head", copy.head},
                             {"leader_epoch", a->record ? a->record->leader_epoch : 0}});
            caf::anon_send(hub, actors::adopt_atom::value, actors::stream_handoff_ptr{});
          },
          [self, key, hub](caf::error& err) { claim_later(self, key, hub, self->system().render(err)); });
}

// Publishes are refused meanwhile, with the reason; sessions wait.
void claim_later(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
                 const std::string& why) {
  logging::debug("cluster.claim_waits", {{"stream", key.name}, {"reason", why}});
  caf::anon_send(hub, actors::hold_atom::value, "the stream has no leader yet: " + why + "; retry");
  self->delayed_send(self, std::chrono::milliseconds(500), retry_atom::value, key.tenant, key.name, hub);
}

// The pulled log is this node's once the record says so (`succeed`): the
// holder wrote nothing more while it was pulled.
void succeed_then_adopt(self_ptr self, const std::shared_ptr<node_state::pull_job>& job,
                        std::shared_ptr<actors::stream_handoff> log) {
  auto& st = self->state;
  // The hub the log was pulled for was replaced meanwhile (the stream moved
  // away and back): taking the record for it would name a leader that
  // stores nothing. The current hub makes its own claim.
  if (!st.cfg.hubs->is_current(job->stream, job->hub.address())) return;
  auto ask = std::make_shared<record_request>();
  ask->what = record_request::kind::succeed;
  ask->stream = job->stream;
  ask->me = st.table.self().id;
  ask->member = job->holder_id;
  ask->at_epoch = job->leader_epoch;
  ask->my_end = log->meta.head_seq;
  ask->live = st.cfg.view->current()->holders;
  self->request(*st.cfg.view->records(), std::chrono::seconds(10), record_atom::value,
                record_request_ptr(std::move(ask)))
      .then(
          [self, job, log](const record_answer_ptr& a) mutable {
            if (!a->ok) return claim_later(self, job->stream, job->hub, a->reason);
            auto holder = job->holder;
            auto key = job->stream;
            auto epoch = log->meta.epoch;
            log->committed = [holder, key, epoch] {
              caf::anon_send(holder, taken_atom::value, key.tenant, key.name, epoch);
            };
            logging::info("cluster.stream_taken",
                          {{"stream", key.name},
                           {"from", job->holder_id},
                           {"events", static_cast<std::uint64_t>(log->events.size())}});
            caf::anon_send(job->hub, actors::adopt_atom::value, actors::stream_handoff_ptr(std::move(log)));
          },
          [self, job](caf::error& err) {
            claim_later(self, job->stream, job->hub, self->system().render(err));
          });
}

}  // namespace

void with_copy_stopped(self_ptr self, const actors::stream_key& key,
                       const std::function<void(const copy_status&)>& then) {
  // The host always answers (its own wait on the follower is bounded).
  self->request(self->state.replica_host, caf::infinite, stop_atom::value, key.tenant, key.name)
      .then([then](const copy_status& copy) { then(copy); },
            [self, key, then](caf::error&) {
              then(stored_copy(*self->state.cfg.store, key, self->state.table.self().id));
            });
}

void on_pull(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub) {
  // Whatever follower ran here for this stream stops writing first: the hub
  // reads the store once it has the answer.
  with_copy_stopped(self, key,
                    [self, key, hub](const copy_status& copy) { pull_with(self, key, hub, copy); });
}

void on_claim_retry(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub) {
  // A stream this node no longer owns, or whose hub the registry replaced:
  // that hub was moved, and what it held went to the new route. A stream
  // pinned here stays here whatever placement says (a watch or source
  // writes it): its hub goes on claiming.
  auto& st = self->state;
  if (!st.cfg.hubs->is_current(key, hub.address())) return;
  if (!st.cfg.hubs->pinned(key) && !st.cfg.view->owner_of(key.tenant, key.name).empty()) return;
  on_pull(self, key, hub);
}

void on_pull_retry(self_ptr self, std::uint64_t token) {
  if (self->state.pulls.contains(token)) ask_holder(self, token, 0);
}

caf::result<std::string> on_take(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::TakeRequest req;
  proto::TakeReply retry;
  retry.set_status(proto::TakeReply::RETRY);
  if (!parse(bytes, &req)) return retry.SerializeAsString();
  actors::stream_key key{req.tenant(), req.stream()};
  // Only to the member this node also sees as the owner: a view that has
  // not converged yet must not give a stream away twice.
  if (st.cfg.view->owner_of(key.tenant, key.name) != req.requester()) return retry.SerializeAsString();
  // A source or watch running here still writes it: not ours to give,
  // unless draining, which ends them soon (the new owner asks again).
  if (st.cfg.hubs->pinned(key)) {
    if (st.draining) return retry.SerializeAsString();
    proto::TakeReply none;
    none.set_status(proto::TakeReply::NONE);
    return none.SerializeAsString();
  }
  logging::debug("cluster.take_asked",
                 {{"stream", key.name}, {"by", req.requester()}, {"after", req.after_seq()}});
  if (req.after_seq() == 0) {
    // A follower's copy is handed out only when its owner said it was
    // whole (ADR 0017; one from before a restart cannot say), or when the
    // stream's record says so (the requester found this member in the ISR).
    auto rp = self->make_response_promise();
    const bool vouched = req.by_record();
    with_copy_stopped(self, key, [self, rp, key, vouched](const copy_status& copy) mutable {
      if (copy.exists && copy.owner != self->state.table.self().id && !copy.in_sync && !vouched) {
        proto::TakeReply none;
        none.set_status(proto::TakeReply::NONE);
        rp.deliver(none.SerializeAsString());
        return;
      }
      answer_take(self, rp, key, 0);
    });
    return rp;
  }
  auto rp = self->make_response_promise();
  answer_take(self, rp, key, req.after_seq());
  return rp;
}

namespace {

void answer_take(self_ptr self, caf::response_promise rp, const actors::stream_key& key,
                 std::uint64_t after) {
  auto& st = self->state;
  auto moved = st.cfg.hubs->moved_hub(key);
  if (!moved) {
    rp.deliver(read_chunk(self, key, after, chunk_events));
    return;
  }
  // The hub this node had may still be writing: answer after its last write.
  self->request(*moved, st.cfg.request_timeout, actors::quiesce_atom::value)
      .then([self, rp, key, after](bool) mutable { rp.deliver(read_chunk(self, key, after, chunk_events)); },
            [self, rp, key, after](caf::error&) mutable {
              rp.deliver(read_chunk(self, key, after, chunk_events));
            });
}

}  // namespace

void on_taken(self_ptr self, const actors::stream_key& key, std::uint64_t epoch) {
  auto& st = self->state;
  std::optional<persistence::stream_meta> meta;
  if (auto s = st.cfg.store->get_stream(key.tenant, key.name, &meta);
      s.ok() && meta && meta->epoch == epoch && !st.cfg.hubs->pinned(key) &&
      !st.cfg.view->owner_of(key.tenant, key.name).empty()) {
    // The new owner has it durable: this copy would only go stale, unless
    // it already follows the new owner (a follower runs here for it).
    self->send(st.replica_host, drop_atom::value, key.tenant, key.name, epoch);
    st.cfg.hubs->forget_moved(key);
  }
  if (st.draining) st.handed.insert(key);
  if (st.handing.erase(key) > 0 && st.handing.empty()) end_drain(self);
}

void rebalance(self_ptr self) {
  // After a short quiet time: a join or a drain changes membership on every
  // node within one gossip round.
  self->delayed_send(self, std::chrono::milliseconds(300), rebalance_atom::value,
                     ++self->state.rebalance_generation);
}

namespace {

void rebalance_now(self_ptr self) {
  auto& st = self->state;
  std::vector<persistence::stream_meta> metas;
  if (auto s = st.cfg.store->load_streams(&metas); !s.ok()) {
    logging::error("cluster.rebalance_failed", {{"error", s.message()}});
    return;
  }
  std::size_t asked = 0;
  auto members = st.cfg.view->current();
  auto factor = st.cfg.view->replication().factor;
  for (auto& m : metas) {
    if (st.cfg.hubs->pinned({m.tenant, m.name})) continue;
    auto owner = st.cfg.view->owner_of(m.tenant, m.name);
    if (owner.empty()) continue;
    if (is_follower_copy(m, st.table.self().id)) {
      // A follower's copy: its owner keeps it current. One this node no
      // longer follows is dropped (unless a follower still runs for it).
      auto followers =
          core::followers_of(members->live, owner, m.tenant, m.name, factor > 0 ? factor - 1 : 0);
      if (std::find(followers.begin(), followers.end(), members->self_id) == followers.end())
        self->send(st.replica_host, drop_atom::value, m.tenant, m.name, m.epoch);
      continue;
    }
    auto handle = st.handles.find(owner);
    if (handle == st.handles.end()) continue;
    if (st.draining) {
      if (st.handed.contains({m.tenant, m.name})) continue;
      st.handing.insert({m.tenant, m.name});
    }
    self->send(handle->second, adopt_atom::value, m.tenant, m.name, m.term);
    ++asked;
  }
  if (asked > 0) logging::info("cluster.rebalance", {{"streams", static_cast<std::uint64_t>(asked)}});
}

}  // namespace

void on_rebalance(self_ptr self, std::uint64_t generation) {
  auto& st = self->state;
  if (generation != st.rebalance_generation) return;
  if (!st.draining) {
    rebalance_now(self);
    return_sources(self);
    return self->send(st.watch_mover, returns_atom::value);
  }
  if (!st.drain_reply || st.moving_out) return;
  // Draining while members come and go (all of them may be leaving): ask
  // the owners as they are now; nothing left to hand over ends the wait.
  st.handing.clear();
  rebalance_now(self);
  if (st.handing.empty()) end_drain(self);
}

caf::result<std::string> on_drain(self_ptr self) {
  auto& st = self->state;
  if (st.draining) return std::string("already draining");
  st.draining = true;
  auto me = st.table.self();
  me.draining = true;
  st.table.set_self(me);
  logging::info("cluster.draining", {{"node", me.id}});
  if (st.registrar) self->send(st.registrar, drain_atom::value);
  self->send(st.source_host, drain_atom::value);
  self->send(st.watch_router, drain_atom::value);
  // Everyone stops placing keys here: the record says so, and each peer
  // hears it directly first, ahead of the watches this node hands over.
  for (auto& [id, handle] : st.handles) self->send(handle, draining_atom::value, me.id, me.incarnation);
  // Watches and sources go first: their streams stay pinned here while
  // they run.
  on_change(self);
  auto rp = self->make_response_promise();
  st.drain_reply = rp;
  st.moving_out = true;
  move_out(self, [self] {
    auto& st = self->state;
    st.moving_out = false;
    // This node's hubs move now.
    ++st.rebalance_generation;
    rebalance_now(self);
    if (st.handing.empty()) {
      end_drain(self);
    } else {
      self->delayed_send(self, drain_for, drain_end_atom::value);
    }
  });
  return rp;
}

void end_drain(self_ptr self) {
  auto& st = self->state;
  if (!st.drain_reply) return;
  auto left = st.handing.size();
  if (left > 0)
    logging::warn("cluster.drain_incomplete", {{"streams_left", static_cast<std::uint64_t>(left)}});
  else
    logging::info("cluster.drained", {});
  st.drain_reply->deliver(std::to_string(left));
  st.drain_reply.reset();
  st.handing.clear();
}

}  // namespace tidings::cluster
