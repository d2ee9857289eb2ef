// Followers' copies of other members' logs (replication, ADR 0017): the
// node actor routes each owner's appends to the replica actor of that
// stream, spawning it on first use, and stops or drops copies when this
// node takes a stream over, hands one out, or no longer follows it.

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = node_actor*;

std::string reply_of(proto::ReplicaReply::Status status, std::string error) {
  proto::ReplicaReply r;
  r.set_status(status);
  r.set_error(std::move(error));
  return r.SerializeAsString();
}

replica_actor replica_of(self_ptr self, const actors::stream_key& key) {
  auto& st = self->state;
  if (auto it = st.replicas.find(key); it != st.replicas.end()) return it->second;
  replica_config cfg;
  cfg.stream = key;
  cfg.self_id = st.table.self().id;
  cfg.store = st.cfg.store;
  cfg.committer = st.cfg.committer;
  cfg.view = st.cfg.view;
  auto r = self->spawn(replica, std::move(cfg));
  st.replicas.emplace(key, r);
  return r;
}

copy_status stored_copy(self_ptr self, const actors::stream_key& key) {
  copy_status c;
  std::optional<persistence::stream_meta> meta;
  if (auto s = self->state.cfg.store->get_stream(key.tenant, key.name, &meta); !s.ok() || !meta) return c;
  c.exists = true;
  c.owner = meta->term_owner.empty() ? self->state.table.self().id : meta->term_owner;
  c.epoch = meta->epoch;
  c.head = meta->head_seq;
  return c;  // not in sync: no follower here vouches for it
}

}  // namespace

bool is_follower_copy(self_ptr self, const persistence::stream_meta& meta) {
  return !meta.term_owner.empty() && meta.term_owner != self->state.table.self().id;
}

caf::result<std::string> on_replicate(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::ReplicaAppend a;
  if (!parse(bytes, &a) || a.stream().empty())
    return reply_of(proto::ReplicaReply::REFUSED, "unreadable append");
  actors::stream_key key{a.tenant(), a.stream()};
  // This node owns the stream in its view: the sender's view differs (it
  // retries; terms settle who wins once the views agree).
  if (st.cfg.view->owner_of(key.tenant, key.name).empty() || st.cfg.hubs->pinned(key))
    return reply_of(proto::ReplicaReply::REFUSED, "this node sees itself as the stream's owner");
  if (st.deleting.contains(key))
    return reply_of(proto::ReplicaReply::REFUSED, "the old copy is being dropped");
  // Meant for an earlier life of this member (before its registration
  // lapsed): writes may have been acknowledged without it since, so
  // nothing from then may make this copy in sync (ADR 0022).
  if (a.follower_incarnation() != st.table.self().incarnation || !st.table.is_member())
    return reply_of(proto::ReplicaReply::REFUSED, "the append is for another life of this member");
  if (st.forgetting.contains(key)) return reply_of(proto::ReplicaReply::REFUSED, "the copy is being stopped");
  return self->delegate(replica_of(self, key), replicate_atom::value,
                        std::make_shared<replica_append>(from_proto(std::move(a))));
}

void forget_sync(self_ptr self) {
  auto& st = self->state;
  auto replicas = std::move(st.replicas);
  st.replicas.clear();
  for (auto& [stream, replica] : replicas) {
    const actors::stream_key key = stream;  // a lambda cannot capture a structured binding (C++17)
    st.forgetting.insert(key);
    self->request(replica, st.cfg.request_timeout, stop_atom::value)
        .then([self, key](bool, const std::string&, std::uint64_t,
                          std::uint64_t) { self->state.forgetting.erase(key); },
              [self, key](caf::error&) { self->state.forgetting.erase(key); });
  }
  if (!replicas.empty())
    logging::warn("cluster.copies_unsynced", {{"copies", static_cast<std::uint64_t>(replicas.size())}});
}

caf::result<std::string> on_release(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::ReplicaRelease r;
  if (!parse(bytes, &r) || r.stream().empty()) return std::string{};
  actors::stream_key key{r.tenant(), r.stream()};
  if (st.cfg.view->owner_of(key.tenant, key.name).empty() || st.cfg.hubs->pinned(key)) return std::string{};
  auto it = st.replicas.find(key);
  if (it == st.replicas.end()) {
    // No follower runs: drop a copy of another member's log if there is one.
    std::optional<persistence::stream_meta> meta;
    if (st.cfg.store->get_stream(key.tenant, key.name, &meta).ok() && meta && is_follower_copy(self, *meta))
      drop_copy(self, *meta);
    return std::string{};
  }
  auto replica = it->second;
  st.replicas.erase(it);
  st.deleting.insert(key);
  auto rp = self->make_response_promise();
  self->request(replica, st.cfg.request_timeout, release_atom::value)
      .then(
          [self, rp, key](const std::string&) mutable {
            self->state.deleting.erase(key);
            rp.deliver(std::string{});
          },
          [self, rp, key](caf::error&) mutable {
            self->state.deleting.erase(key);
            rp.deliver(std::string{});
          });
  return rp;
}

void with_copy_stopped(self_ptr self, const actors::stream_key& key,
                       const std::function<void(const copy_status&)>& then) {
  auto& st = self->state;
  auto it = st.replicas.find(key);
  if (it == st.replicas.end()) return then(stored_copy(self, key));
  auto replica = it->second;
  st.replicas.erase(it);
  self->request(replica, st.cfg.request_timeout, stop_atom::value)
      .then(
          [then](bool in_sync, const std::string& owner, std::uint64_t epoch, std::uint64_t head) {
            then(copy_status{epoch != 0, in_sync, owner, epoch, head});
          },
          [self, key, then](caf::error&) { then(stored_copy(self, key)); });
}

void drop_copy(self_ptr self, const persistence::stream_meta& meta) {
  auto& st = self->state;
  actors::stream_key key{meta.tenant, meta.name};
  if (st.replicas.contains(key) || !st.deleting.insert(key).second) return;
  persistence::write_set ws;
  ws.meta_delete = std::make_pair(meta.tenant, meta.name);
  ws.stream_id = meta.id;
  ws.trim_before = meta.head_seq + 1;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  st.cfg.committer->submit(std::move(ws), [me, key](const persistence::status& s) {
    if (!s.ok()) logging::warn("cluster.drop_copy_failed", {{"stream", key.name}, {"error", s.message()}});
    caf::anon_send(me, deleted_atom::value, key.tenant, key.name);
  });
}

}  // namespace tidings::cluster
