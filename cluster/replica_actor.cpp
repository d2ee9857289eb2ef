#include "cluster/replica_actor.hpp"

#include <algorithm>

#include "cluster/cluster_view.hpp"
#include "cluster/wire.hpp"
#include "core/retention.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

using self_ptr = replica_actor::stateful_pointer<replica_state>;

std::string answer(proto::ReplicaReply::Status status, std::uint64_t epoch, std::uint64_t head,
                   std::string error = {}) {
  proto::ReplicaReply r;
  r.set_status(status);
  r.set_epoch(epoch);
  r.set_head(head);
  r.set_error(std::move(error));
  return r.SerializeAsString();
}

std::string refused(std::string why) {
  return answer(proto::ReplicaReply::REFUSED, 0, 0, std::move(why));
}

// Whose log this copy is: its term's writer ("" in the store: this node's own).
std::string copy_owner(const replica_state& st) {
  if (!st.meta) return {};
  return st.meta->term_owner.empty() ? st.cfg.self_id : st.meta->term_owner;
}

std::uint64_t epoch_of(const replica_state& st) {
  return st.meta ? st.meta->epoch : 0;
}

std::uint64_t head_of(const replica_state& st) {
  return st.meta ? st.meta->head_seq : 0;
}

void publish_state(self_ptr self) {
  auto& st = self->state;
  replication_info info;
  info.role = "follower";
  info.by = self->address();
  info.term = st.meta ? st.meta->term : 0;
  info.owner = copy_owner(st);
  info.head = head_of(st);
  info.in_sync = st.in_sync;
  st.cfg.view->set_replication(st.cfg.stream, std::move(info));
}

void submit(self_ptr self, persistence::write_set ws,
            std::optional<caf::typed_response_promise<std::string>> reply, std::string reply_text,
            bool synced) {
  auto& st = self->state;
  replica_state::in_flight entry;
  entry.token = st.next_token++;
  entry.reply = std::move(reply);
  entry.answer = std::move(reply_text);
  entry.synced = synced;
  auto token = entry.token;
  st.writing.push_back(std::move(entry));
  replica_actor handle = self;
  st.cfg.committer->submit(std::move(ws), [handle, token](const persistence::status& s) {
    caf::anon_send(handle, written_atom::value, token, s.message());
  });
}

// Once nothing is being written: the stop and release waiters.
void when_idle(self_ptr self) {
  auto& st = self->state;
  if (!st.writing.empty()) return;
  if (!st.stop_waiters.empty()) {
    for (auto& rp : st.stop_waiters) rp.deliver(st.in_sync, copy_owner(st), epoch_of(st), head_of(st));
    st.stop_waiters.clear();
    // Stopped for good: whoever stopped it owns the copy now.
    if (st.release_waiters.empty()) return self->quit();
  }
  if (st.release_waiters.empty()) return;
  if (st.meta) {
    persistence::write_set ws;
    ws.meta_delete = std::make_pair(st.meta->tenant, st.meta->name);
    ws.stream_id = st.meta->id;
    ws.trim_before = st.meta->head_seq + 1;
    st.meta.reset();
    st.in_sync = false;
    submit(self, std::move(ws), std::nullopt, {}, false);
    return;  // answered once that is durable
  }
  for (auto& rp : st.release_waiters) rp.deliver(std::string{});
  st.release_waiters.clear();
  logging::debug("replication.copy_released", {{"stream", st.cfg.stream.name}});
  self->quit();
}

caf::result<std::string> on_append(self_ptr self, const replica_append_ptr& append) {
  auto& st = self->state;
  auto& a = *append;
  if (st.failed) return refused("this node's copy of the stream failed to write; see its log");
  if (st.stopped) return refused("this node no longer follows the stream");
  auto owner = st.cfg.view->owner_of(st.cfg.stream.tenant, st.cfg.stream.name);
  if (owner != a.owner)
    return refused("this node sees " + (owner.empty() ? std::string("itself") : owner) +
                   " as the stream's owner");
  auto writer = copy_owner(st);
  if (st.meta && a.term < st.meta->term) {
    proto::ReplicaReply r;
    r.set_status(proto::ReplicaReply::FENCED);
    r.set_epoch(st.meta->epoch);
    r.set_head(st.meta->head_seq);
    r.set_term(st.meta->term);
    r.set_term_owner(writer);
    return r.SerializeAsString();
  }
  persistence::write_set ws;
  auto next = st.meta;
  if (a.reset) {
    if (a.prev_seq + 1 != a.first_seq) return refused("a reset must start at the log's first seq");
    if (st.meta) {
      // The old copy goes (its id with it); the new one gets an id of ours.
      persistence::write_set drop;
      drop.stream_id = st.meta->id;
      drop.trim_before = st.meta->head_seq + 1;
      submit(self, std::move(drop), std::nullopt, {}, false);
    }
    std::uint64_t id = 0;
    if (auto s = st.cfg.store->allocate_stream_id(&id); !s.ok()) return refused(s.message());
    next.emplace();
    next->tenant = st.cfg.stream.tenant;
    next->name = st.cfg.stream.name;
    next->id = id;
    next->epoch = a.epoch;
    next->first_seq = a.first_seq;
    next->head_seq = a.prev_seq;
  } else if (!st.meta || st.meta->epoch != a.epoch) {
    return answer(proto::ReplicaReply::GAP, epoch_of(st), head_of(st));  // the owner resets it
  } else if (a.term == st.meta->term && a.owner != writer) {
    // Two members took the same log over at once (their views differed);
    // this node sees the sender as the owner now, so its own copy lost.
    return answer(proto::ReplicaReply::GAP, 0, 0);
  } else if (a.term != st.meta->term) {
    // A newer term. A copy of the log that term began from agrees with it
    // up to that log's head; what it holds beyond was never the new
    // owner's (an unacknowledged tail of the old term) and goes.
    auto base_owner = a.base_owner.empty() ? a.owner : a.base_owner;
    if (st.meta->term != a.base_term || writer != base_owner)
      return answer(proto::ReplicaReply::GAP, 0, 0);  // another lineage: the owner resets it
    auto keep = std::min(st.meta->head_seq, a.base_head);
    if (keep < st.meta->head_seq) {
      ws.truncate_after = keep;
      next->head_seq = keep;
    }
    if (a.prev_seq != keep) {
      st.in_sync = false;
      if (!ws.truncate_after) return answer(proto::ReplicaReply::GAP, next->epoch, keep);
      // Cut back (still in the old term); the owner sends from there.
      ws.stream_id = next->id;
      ws.meta = *next;
      st.meta = next;
      auto rp = self->make_response_promise<std::string>();
      submit(self, std::move(ws), rp, answer(proto::ReplicaReply::GAP, next->epoch, keep), false);
      publish_state(self);
      return rp;
    }
  }
  if (a.prev_seq > next->head_seq) return answer(proto::ReplicaReply::GAP, next->epoch, next->head_seq);
  for (auto& e : a.events) {
    if (e.seq <= next->head_seq) continue;  // sent again: we have it
    if (e.seq != next->head_seq + 1) return answer(proto::ReplicaReply::GAP, next->epoch, next->head_seq);
    next->head_seq = e.seq;
    ws.events.push_back(std::move(e));
  }
  next->first_seq = std::min(std::max(next->first_seq, a.first_seq), next->head_seq + 1);
  if (next->id != (st.meta ? st.meta->id : 0)) st.deleted_below = 0;
  if (auto cut = core::physical_trim_due(st.deleted_below, next->first_seq, a.retention_count)) {
    ws.trim_before = cut;
    st.deleted_below = cut;
  }
  next->retention_count = a.retention_count;
  next->retention_age_ms = a.retention_age_ms;
  next->created_ms = a.created_ms;
  next->term = a.term;
  next->term_owner = a.owner;
  ws.idempotency = std::move(a.idempotency);
  ws.stream_id = next->id;
  ws.meta = *next;
  if (!st.meta || st.meta->term != next->term)
    logging::debug(
        "replication.following",
        {{"stream", st.cfg.stream.name}, {"owner", a.owner}, {"term", a.term}, {"head", next->head_seq}});
  st.meta = next;
  if (!a.synced) st.in_sync = false;
  auto rp = self->make_response_promise<std::string>();
  submit(self, std::move(ws), rp, answer(proto::ReplicaReply::OK, next->epoch, next->head_seq), a.synced);
  return rp;
}

void on_written(self_ptr self, std::uint64_t token, const std::string& error) {
  auto& st = self->state;
  if (st.writing.empty() || st.writing.front().token != token) {
    logging::error("replication.write_out_of_order", {{"stream", st.cfg.stream.name}, {"token", token}});
    return;
  }
  auto entry = std::move(st.writing.front());
  st.writing.pop_front();
  if (!error.empty() || st.failed) {
    // A copy with a hole must never be taken over: refuse everything now.
    if (!st.failed)
      logging::error("replication.write_failed", {{"stream", st.cfg.stream.name}, {"error", error}});
    st.failed = true;
    st.in_sync = false;
    if (entry.reply) entry.reply->deliver(refused("the copy's write failed: " + error));
  } else {
    if (entry.synced) st.in_sync = true;
    if (entry.reply) entry.reply->deliver(entry.answer);
  }
  publish_state(self);
  when_idle(self);
}

}  // namespace

replica_actor::behavior_type replica(replica_actor::stateful_pointer<replica_state> self,
                                     replica_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  if (auto s = st.cfg.store->get_stream(st.cfg.stream.tenant, st.cfg.stream.name, &st.meta); !s.ok()) {
    logging::error("replication.load_failed", {{"stream", st.cfg.stream.name}, {"error", s.message()}});
    st.failed = true;
  }
  self->attach_functor([view = st.cfg.view, key = st.cfg.stream, addr = self->address()] {
    view->erase_replication(key, addr);
  });
  return {
      [self](replicate_atom, const replica_append_ptr& append) { return on_append(self, append); },
      [self](stop_atom) -> caf::result<bool, std::string, std::uint64_t, std::uint64_t> {
        auto& st = self->state;
        st.stopped = true;
        auto rp = self->make_response_promise<bool, std::string, std::uint64_t, std::uint64_t>();
        st.stop_waiters.push_back(rp);
        when_idle(self);
        return rp;
      },
      [self](release_atom) -> caf::result<std::string> {
        auto& st = self->state;
        st.stopped = true;
        auto rp = self->make_response_promise<std::string>();
        st.release_waiters.push_back(rp);
        when_idle(self);
        return rp;
      },
      [self](written_atom, std::uint64_t token, const std::string& error) { on_written(self, token, error); },
  };
}

}  // namespace tidings::cluster
