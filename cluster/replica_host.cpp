#include "cluster/replica_host.hpp"

#include "cluster/cluster_view.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = replica_host_actor::stateful_pointer<replica_host_state>;

std::string refusal(std::string error) {
  proto::ReplicaReply r;
  r.set_status(proto::ReplicaReply::REFUSED);
  r.set_error(std::move(error));
  return r.SerializeAsString();
}

// This node owns the stream in its own view (or a source or watch here
// writes it): no owner's appends are taken for it.
bool owned_here(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  return st.cfg.view->owner_of(key.tenant, key.name).empty() || st.cfg.hubs->pinned(key);
}

replica_actor replica_of(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  if (auto it = st.replicas.find(key); it != st.replicas.end()) return it->second;
  replica_config cfg;
  cfg.stream = key;
  cfg.self_id = st.cfg.self_id;
  cfg.store = st.cfg.store;
  cfg.committer = st.cfg.committer;
  cfg.view = st.cfg.view;
  auto r = self->spawn(replica, std::move(cfg));
  st.replicas.emplace(key, r);
  return r;
}

caf::result<std::string> on_replicate(self_ptr self, replica_append_ptr a) {
  auto& st = self->state;
  const auto key = a->stream;
  // The sender's view differs (it retries; terms settle who wins once the
  // views agree).
  if (owned_here(self, key)) return refusal("this node sees itself as the stream's owner");
  if (st.deleting.contains(key)) return refusal("the old copy is being dropped");
  if (st.forgetting.contains(key)) return refusal("the copy is being stopped");
  return self->delegate(replica_of(self, key), replicate_atom::value, std::move(a));
}

// A dropped copy is gone: the stops that waited for it are answered.
void done_deleting(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  st.deleting.erase(key);
  auto waiting = st.after_delete.extract(key);
  if (waiting.empty()) return;
  const auto copy = stored_copy(*st.cfg.store, key, st.cfg.self_id);
  for (auto& rp : waiting.mapped()) rp.deliver(copy);
}

void delete_copy(self_ptr self, const persistence::stream_meta& meta) {
  auto& st = self->state;
  actors::stream_key key{meta.tenant, meta.name};
  if (st.replicas.contains(key) || !st.deleting.insert(key).second) return;
  persistence::write_set ws;
  ws.meta_delete = std::make_pair(meta.tenant, meta.name);
  ws.stream_id = meta.id;
  ws.trim_before = meta.head_seq + 1;
  auto me = caf::actor_cast<replica_host_actor>(self);
  st.cfg.committer->submit(std::move(ws), [me, key](const persistence::status& s) {
    if (!s.ok()) logging::warn("cluster.drop_copy_failed", {{"stream", key.name}, {"error", s.message()}});
    caf::anon_send(me, deleted_atom::value, key.tenant, key.name);
  });
}

caf::result<bool> on_release(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  if (owned_here(self, key)) return true;
  auto it = st.replicas.find(key);
  if (it == st.replicas.end()) {
    // No follower runs: drop a copy of another member's log if there is one.
    std::optional<persistence::stream_meta> meta;
    if (st.cfg.store->get_stream(key.tenant, key.name, &meta).ok() && meta &&
        is_follower_copy(*meta, st.cfg.self_id))
      delete_copy(self, *meta);
    return true;
  }
  auto follower = it->second;
  st.replicas.erase(it);
  st.deleting.insert(key);
  auto rp = self->make_response_promise<bool>();
  // Done either way: a follower that did not answer drops nothing more.
  auto done = [self, rp, key]() mutable {
    done_deleting(self, key);
    rp.deliver(true);
  };
  self->request(follower, st.cfg.request_timeout, release_atom::value)
      .then([done](const std::string&) mutable { done(); }, [done](caf::error&) mutable { done(); });
  return rp;
}

// What `follower` leaves once it has stopped; from the store if it cannot say.
void answer_when_stopped(self_ptr self, const replica_actor& follower, const actors::stream_key& key,
                         caf::typed_response_promise<copy_status> rp, bool may_be_in_sync) {
  self->request(follower, self->state.cfg.request_timeout, stop_atom::value)
      .then(
          [rp, may_be_in_sync](bool in_sync, const std::string& owner, std::uint64_t epoch,
                               std::uint64_t head) mutable {
            rp.deliver(copy_status{epoch != 0, in_sync && may_be_in_sync, owner, epoch, head});
          },
          [self, rp, key](caf::error&) mutable {
            rp.deliver(stored_copy(*self->state.cfg.store, key, self->state.cfg.self_id));
          });
}

caf::result<copy_status> on_stop(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  auto rp = self->make_response_promise<copy_status>();
  if (auto it = st.replicas.find(key); it != st.replicas.end()) {
    auto follower = it->second;
    st.replicas.erase(it);
    answer_when_stopped(self, follower, key, rp, true);
  } else if (auto lapsed = st.forgetting.find(key); lapsed != st.forgetting.end()) {
    // Still writing what it had: its answer, which can no longer vouch.
    answer_when_stopped(self, lapsed->second, key, rp, false);
  } else if (st.deleting.contains(key)) {
    st.after_delete[key].push_back(rp);
  } else {
    rp.deliver(stored_copy(*st.cfg.store, key, st.cfg.self_id));
  }
  return rp;
}

void on_drop(self_ptr self, const actors::stream_key& key, std::uint64_t epoch) {
  std::optional<persistence::stream_meta> meta;
  if (self->state.cfg.store->get_stream(key.tenant, key.name, &meta).ok() && meta && meta->epoch == epoch)
    delete_copy(self, *meta);
}

void on_forget(self_ptr self) {
  auto& st = self->state;
  auto followers = std::move(st.replicas);
  st.replicas.clear();
  for (auto& [stream, follower] : followers) {
    const actors::stream_key key = stream;  // a lambda cannot capture a structured binding (C++17)
    st.forgetting.emplace(key, follower);
    self->request(follower, st.cfg.request_timeout, stop_atom::value)
        .then([self, key](bool, const std::string&, std::uint64_t,
                          std::uint64_t) { self->state.forgetting.erase(key); },
              [self, key](caf::error&) { self->state.forgetting.erase(key); });
  }
  if (!followers.empty())
    logging::warn("cluster.copies_unsynced", {{"copies", static_cast<std::uint64_t>(followers.size())}});
}

}  // namespace

bool is_follower_copy(const persistence::stream_meta& meta, const std::string& self_id) {
  return !meta.term_owner.empty() && meta.term_owner != self_id;
}

copy_status stored_copy(persistence::store& store, const actors::stream_key& key,
                        const std::string& self_id) {
  copy_status c;
  std::optional<persistence::stream_meta> meta;
  if (auto s = store.get_stream(key.tenant, key.name, &meta); !s.ok() || !meta) return c;
  c.exists = true;
  c.owner = meta->term_owner.empty() ? self_id : meta->term_owner;
  c.epoch = meta->epoch;
  c.head = meta->head_seq;
  return c;
}

replica_host_actor::behavior_type replica_host(replica_host_actor::stateful_pointer<replica_host_state> self,
                                               replica_host_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
      [self](replicate_atom, replica_append_ptr a) { return on_replicate(self, std::move(a)); },
      [self](release_atom, const std::string& tenant, const std::string& stream) {
        return on_release(self, {tenant, stream});
      },
      [self](stop_atom, const std::string& tenant, const std::string& stream) {
        return on_stop(self, {tenant, stream});
      },
      [self](drop_atom, const std::string& tenant, const std::string& stream, std::uint64_t epoch) {
        on_drop(self, {tenant, stream}, epoch);
      },
      [self](forget_atom) { on_forget(self); },
      [self](deleted_atom, const std::string& tenant, const std::string& stream) {
        done_deleting(self, {tenant, stream});
      },
  };
}

}  // namespace tidings::cluster
