#include "cluster/handoff.hpp"

#include <algorithm>
#include <functional>

#include "cluster/cluster_view.hpp"
#include "cluster/record_keeper.hpp"
#include "cluster/wire.hpp"
#include "core/cursor.hpp"
#include "core/placement.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = handoff_pointer;

// How long a new owner keeps asking a holder that does not see it as the
// owner yet (views converge within a gossip round) or is still ending the
// source or watch that writes the stream (a drain closes upstream
// connections first): giving up means a new epoch and a resync for every
// subscriber, so it waits well past either. And how long a drain waits for
// the new owners to take everything.
constexpr auto retry_for = std::chrono::seconds(10);
constexpr auto retry_every = std::chrono::milliseconds(100);
constexpr auto claim_every = std::chrono::milliseconds(500);
constexpr auto drain_for = std::chrono::seconds(15);

// A member the agreed record lists as up (draining or not).
bool is_up(self_ptr self, const std::string& id) {
  const auto& holders = self->state.cfg.view->current()->holders;
  return std::binary_search(holders.begin(), holders.end(), id);
}

// --- as the new owner ----------------------------------------------------------

void claim_later(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
                 const std::string& why);
void succeed_then_adopt(self_ptr self, const std::shared_ptr<pull_job>& job,
                        std::shared_ptr<actors::stream_handoff> log);

// Once the new owner has the log durable, the holder may drop its copy.
void tell_holder_when_committed(const pull_job& job, actors::stream_handoff& log) {
  auto holder = job.holder;
  auto key = job.stream;
  auto epoch = log.meta.epoch;
  log.committed = [holder, key, epoch] {
    caf::anon_send(holder, taken_atom::value, key.tenant, key.name, epoch);
  };
  logging::info("cluster.stream_taken", {{"stream", key.name},
                                         {"from", job.holder_id},
                                         {"events", static_cast<std::uint64_t>(log.events.size())}});
}

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
  if (!log) return caf::anon_send(job->hub, actors::adopt_atom::value, job->fallback);
  tell_holder_when_committed(*job, *log);
  caf::anon_send(job->hub, actors::adopt_atom::value, actors::stream_handoff_ptr(std::move(log)));
}

// The holder may still answer: the record lists it and the job has time
// left. Going on without its log would serve a stale one.
bool holder_may_answer(self_ptr self, const pull_job& job) {
  return is_up(self, job.holder_id) && std::chrono::steady_clock::now() < job.give_up_at;
}

// A holder the record lists but this node has no connection to (yet: a
// node that just registered again is still dialling) is waited for.
bool await_holder(self_ptr self, std::uint64_t token) {
  auto job = self->state.pulls.at(token);
  if (auto h = self->state.cfg.view->current()->node_of(job->holder_id)) {
    job->holder = h;
    return false;
  }
  if (holder_may_answer(self, *job)) {
    self->delayed_send(self, retry_every, retry_atom::value, token);
    return true;
  }
  logging::warn(
      "cluster.take_failed",
      {{"stream", job->stream.name}, {"holder", job->holder_id}, {"error", "no connection to the holder"}});
  finish_pull(self, token, nullptr);
  return true;
}

void on_chunk(self_ptr self, std::uint64_t token, log_chunk chunk);

void ask_holder(self_ptr self, std::uint64_t token, std::uint64_t after_seq) {
  auto& st = self->state;
  if (await_holder(self, token)) return;
  auto job = st.pulls.at(token);
  auto req = to_proto(take_request{job->stream, st.cfg.self_id, after_seq, job->claimed});
  self->request(job->holder, st.cfg.request_timeout, take_atom::value, req.SerializeAsString())
      .then(
          [self, token](const std::string& bytes) {
            auto it = self->state.pulls.find(token);
            if (it == self->state.pulls.end()) return;
            proto::TakeReply r;
            if (!parse(bytes, &r)) return on_chunk(self, token, log_chunk{});
            on_chunk(self, token, from_proto(std::move(r), it->second->stream));
          },
          [self, token](caf::error& err) {
            auto it = self->state.pulls.find(token);
            if (it == self->state.pulls.end()) return;
            auto job = it->second;
            // A holder still listed is asked again (from the start) within
            // the job's time; one that is gone or past it: go on with what
            // this node has (the stream starts a new epoch if nothing;
            // subscribers resync).
            if (holder_may_answer(self, *job)) {
              job->log.reset();
              return void(self->delayed_send(self, retry_every, retry_atom::value, token));
            }
            logging::warn("cluster.take_failed", {{"stream", job->stream.name},
                                                  {"holder", job->holder_id},
                                                  {"error", self->system().render(err)}});
            finish_pull(self, token, nullptr);
          });
}

void on_chunk(self_ptr self, std::uint64_t token, log_chunk chunk) {
  auto job = self->state.pulls.at(token);
  if (chunk.status == log_chunk::kind::none) {
    // None halfway through (the holder lost its copy) is no log at all,
    // never a partial one.
    if (job->log) logging::warn("cluster.take_broken", {{"stream", job->stream.name}});
    return finish_pull(self, token, nullptr);
  }
  if (chunk.status == log_chunk::kind::retry) {
    job->log.reset();  // the retry starts again from the beginning
    if (std::chrono::steady_clock::now() < job->give_up_at)
      return void(self->delayed_send(self, retry_every, retry_atom::value, token));
    logging::warn("cluster.take_refused", {{"stream", job->stream.name}, {"holder", job->holder_id}});
    return finish_pull(self, token, nullptr);
  }
  if (!job->log) {
    job->log = std::make_shared<actors::stream_handoff>();
    job->log->meta = std::move(chunk.meta);
    job->log->idempotency = std::move(chunk.idempotency);
  }
  auto& events = job->log->events;
  events.insert(events.end(), std::make_move_iterator(chunk.events.begin()),
                std::make_move_iterator(chunk.events.end()));
  if (chunk.more && !events.empty()) return ask_holder(self, token, events.back().seq);
  finish_pull(self, token, job->log);
}

// A pull of `key`'s log from `holder_id` for `hub`, with the time it may take.
std::shared_ptr<pull_job> start_pull(const actors::stream_key& key, const actors::hub_handoff_actor& hub,
                                     const std::string& holder_id) {
  auto job = std::make_shared<pull_job>();
  job->stream = key;
  job->hub = hub;
  job->holder_id = holder_id;
  job->give_up_at = std::chrono::steady_clock::now() + retry_for;
  return job;
}

// Registers the job and asks its holder for the first chunk.
void run_pull(self_ptr self, std::shared_ptr<pull_job> job) {
  auto token = self->state.next_token++;
  self->state.pulls.emplace(token, std::move(job));
  ask_holder(self, token, 0);
}

void claim(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
           const copy_status& copy);

// Replication (ADR 0017) without a record: a follower's copy whose owner
// is gone is the log, when the owner said it was whole; the stream goes on
// from it in the same epoch. Otherwise the log is pulled from the previous
// holder; when none answers, this node's own log is kept, but a follower's
// copy that cannot be shown whole is dropped for a new epoch (`fresh`).
void pull_with(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub,
               const copy_status& copy) {
  auto& st = self->state;
  if (st.cfg.view->has_record(key)) return claim(self, key, hub, copy);
  const bool follower_copy = copy.exists && copy.owner != st.cfg.self_id;
  if (follower_copy && copy.in_sync && !is_up(self, copy.owner)) {
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
  if (holder_id.empty() || !is_up(self, holder_id))
    holder_id = st.cfg.view->previous_holder(key.tenant, key.name);
  if (holder_id.empty() || !is_up(self, holder_id))
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
  auto ask = std::make_shared<record_request>();
  ask->what = record_request::kind::claim;
  ask->stream = key;
  ask->me = st.cfg.self_id;
  ask->has_copy = copy.exists;
  ask->my_end = copy.exists ? copy.head : 0;
  ask->live = st.cfg.view->current()->holders;
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
              auto log = renumbered_copy(*st.cfg.store, key, st.cfg.self_id, forced);
              if (!log) return claim_later(self, key, hub, "this node's copy could not be read");
              return caf::anon_send(hub, actors::adopt_atom::value,
                                    actors::stream_handoff_ptr(std::move(log)));
            }
            if (copy.exists && copy.owner != st.cfg.self_id)
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
  self->delayed_send(self, claim_every, retry_atom::value, key.tenant, key.name, hub);
}

// The pulled log is this node's once the record says so (`succeed`): the
// holder wrote nothing more while it was pulled.
void succeed_then_adopt(self_ptr self, const std::shared_ptr<pull_job>& job,
                        std::shared_ptr<actors::stream_handoff> log) {
  auto& st = self->state;
  // The hub the log was pulled for was replaced meanwhile (the stream moved
  // away and back): taking the record for it would name a leader that
  // stores nothing. The current hub makes its own claim.
  if (!st.cfg.hubs->is_current(job->stream, job->hub.address())) return;
  auto ask = std::make_shared<record_request>();
  ask->what = record_request::kind::succeed;
  ask->stream = job->stream;
  ask->me = st.cfg.self_id;
  ask->member = job->holder_id;
  ask->at_epoch = job->leader_epoch;
  ask->my_end = log->meta.head_seq;
  ask->live = st.cfg.view->current()->holders;
  self->request(*st.cfg.view->records(), std::chrono::seconds(10), record_atom::value,
                record_request_ptr(std::move(ask)))
      .then(
          [self, job, log](const record_answer_ptr& a) mutable {
            if (!a->ok) return claim_later(self, job->stream, job->hub, a->reason);
            tell_holder_when_committed(*job, *log);
            caf::anon_send(job->hub, actors::adopt_atom::value, actors::stream_handoff_ptr(std::move(log)));
          },
          [self, job](caf::error& err) {
            claim_later(self, job->stream, job->hub, self->system().render(err));
          });
}

// Stops whatever follower runs here for `key` (the replica host waits
// until it writes nothing more), then runs `then` with what the copy is.
// (The host always answers: its own wait on the follower is bounded.)
void with_copy_stopped(self_ptr self, const actors::stream_key& key,
                       const std::function<void(const copy_status&)>& then) {
  self->request(self->state.cfg.replicas, caf::infinite, stop_atom::value, key.tenant, key.name)
      .then([then](const copy_status& copy) { then(copy); },
            [self, key, then](caf::error&) {
              then(stored_copy(*self->state.cfg.store, key, self->state.cfg.self_id));
            });
}

void on_pull(self_ptr self, const actors::stream_key& key, const actors::hub_handoff_actor& hub) {
  // The hub reads the store once it has the answer.
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

// --- as the holder ---------------------------------------------------------------

// Answers the chunk after `after` once the hub this node had for the
// stream (it may still be writing) has written its last.
void read_when_quiet(self_ptr self, const actors::stream_key& key, std::uint64_t after,
                     caf::typed_response_promise<log_chunk> rp) {
  auto& st = self->state;
  auto read = [self, rp, key, after]() mutable {
    rp.deliver(read_chunk(*self->state.cfg.store, key, self->state.cfg.self_id, after, chunk_events));
  };
  auto moved = st.cfg.hubs->moved_hub(key);
  if (!moved) return read();
  self->request(*moved, st.cfg.request_timeout, actors::quiesce_atom::value)
      .then([read](bool) mutable { read(); }, [read](caf::error&) mutable { read(); });
}

caf::result<log_chunk> on_take(self_ptr self, const take_request& req) {
  auto& st = self->state;
  const auto& key = req.stream;
  // Only to the member this node also sees as the owner: a view that has
  // not converged yet must not give a stream away twice.
  if (st.cfg.view->owner_of(key.tenant, key.name) != req.requester) return log_chunk::retry_later();
  // A source or watch running here still writes it: not ours to give,
  // unless draining, which ends them soon (the new owner asks again).
  if (st.cfg.hubs->pinned(key)) return st.draining ? log_chunk::retry_later() : log_chunk{};
  logging::debug("cluster.take_asked",
                 {{"stream", key.name}, {"by", req.requester}, {"after", req.after_seq}});
  auto rp = self->make_response_promise<log_chunk>();
  if (req.after_seq != 0) {
    read_when_quiet(self, key, req.after_seq, rp);
    return rp;
  }
  // A follower's copy is handed out only when its owner said it was whole
  // (ADR 0017; one from before a restart cannot say), or when the stream's
  // record says so (the requester found this member in the ISR).
  auto answer = [self, rp, key, vouched = req.by_record](const copy_status& copy) mutable {
    if (copy.exists && copy.owner != self->state.cfg.self_id && !copy.in_sync && !vouched)
      return void(rp.deliver(log_chunk{}));
    read_when_quiet(self, key, 0, rp);
  };
  with_copy_stopped(self, key, std::move(answer));
  return rp;
}

void end_handover(self_ptr self) {
  auto& st = self->state;
  if (!st.handover_reply) return;
  auto left = st.handing.size();
  if (left > 0)
    logging::warn("cluster.drain_incomplete", {{"streams_left", static_cast<std::uint64_t>(left)}});
  else
    logging::info("cluster.drained", {});
  st.handover_reply->deliver(static_cast<std::uint64_t>(left));
  st.handover_reply.reset();
  st.handing.clear();
}

void on_taken(self_ptr self, const actors::stream_key& key, std::uint64_t epoch) {
  auto& st = self->state;
  std::optional<persistence::stream_meta> meta;
  if (auto s = st.cfg.store->get_stream(key.tenant, key.name, &meta);
      s.ok() && meta && meta->epoch == epoch && !st.cfg.hubs->pinned(key) &&
      !st.cfg.view->owner_of(key.tenant, key.name).empty()) {
    // The new owner has it durable: this copy would only go stale, unless
    // it already follows the new owner (a follower runs here for it).
    self->send(st.cfg.replicas, drop_atom::value, key.tenant, key.name, epoch);
    st.cfg.hubs->forget_moved(key);
  }
  if (st.draining) st.handed.insert(key);
  if (st.handing.erase(key) > 0 && st.handing.empty()) end_handover(self);
}

// Asks the owners of the streams this node's store holds but no longer
// owns to take them. Draining: remembers them in `handing`.
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
    if (is_follower_copy(m, st.cfg.self_id)) {
      // A follower's copy: its owner keeps it current. One this node no
      // longer follows is dropped (unless a follower still runs for it).
      auto followers =
          core::followers_of(members->live, owner, m.tenant, m.name, factor > 0 ? factor - 1 : 0);
      if (std::find(followers.begin(), followers.end(), st.cfg.self_id) == followers.end())
        self->send(st.cfg.replicas, drop_atom::value, m.tenant, m.name, m.epoch);
      continue;
    }
    auto handle = members->node_of(owner);
    if (!handle) continue;
    if (st.draining) {
      if (st.handed.contains({m.tenant, m.name})) continue;
      st.handing.insert({m.tenant, m.name});
    }
    // From the node actor: the owner checks the term against the member
    // that sent it.
    caf::send_as(st.cfg.node, handle, adopt_atom::value, m.tenant, m.name, m.term);
    ++asked;
  }
  if (asked > 0) logging::info("cluster.rebalance", {{"streams", static_cast<std::uint64_t>(asked)}});
}

void on_rebalance(self_ptr self) {
  auto& st = self->state;
  if (!st.draining) return rebalance_now(self);
  // Draining, before the hand-over began or after it ended: nothing goes.
  if (!st.handover_reply) return;
  // Draining while members come and go (all of them may be leaving): ask
  // the owners as they are now; nothing left to hand over ends the wait.
  st.handing.clear();
  rebalance_now(self);
  if (st.handing.empty()) end_handover(self);
}

caf::result<std::uint64_t> on_handover(self_ptr self) {
  auto& st = self->state;
  if (st.handover_reply) return caf::make_error(caf::sec::runtime_error, "already handing over");
  st.draining = true;
  auto rp = self->make_response_promise<std::uint64_t>();
  st.handover_reply = rp;
  rebalance_now(self);
  if (st.handing.empty())
    end_handover(self);
  else
    self->delayed_send(self, drain_for, drain_end_atom::value);
  return rp;
}

}  // namespace

handoff_actor::behavior_type handoff(handoff_pointer self, handoff_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
      [self](pull_atom, const std::string& tenant, const std::string& stream,
             const actors::hub_handoff_actor& hub) {
        on_pull(self, {tenant, stream}, hub);
      },
      [self](retry_atom, std::uint64_t token) {
        if (self->state.pulls.contains(token)) ask_holder(self, token, 0);
      },
      [self](retry_atom, const std::string& tenant, const std::string& stream,
             const actors::hub_handoff_actor& hub) {
        on_claim_retry(self, {tenant, stream}, hub);
      },
      [self](take_atom, const take_request& req) { return on_take(self, req); },
      [self](taken_atom, const std::string& tenant, const std::string& stream, std::uint64_t epoch) {
        on_taken(self, {tenant, stream}, epoch);
      },
      [self](rebalance_atom) { on_rebalance(self); },
      [self](drain_atom) { self->state.draining = true; },
      [self](handover_atom) { return on_handover(self); },
      [self](drain_end_atom) { end_handover(self); },
  };
}

}  // namespace tidings::cluster
