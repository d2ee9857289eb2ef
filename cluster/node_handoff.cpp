// The node actor's side of moving streams between members (ADR 0015): the
// wire edge of the handoff actor (takes and reads from other members), the
// quiet time before a rebalance, and the order of a drain: sources and
// watches first, then the streams.

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {

using self_ptr = node_actor*;

caf::result<std::string> on_take(self_ptr self, const std::string& bytes) {
  proto::TakeRequest req;
  if (!parse(bytes, &req)) return to_proto(log_chunk::retry_later()).SerializeAsString();
  auto rp = self->make_response_promise<std::string>();
  self->request(self->state.handoff, caf::infinite, take_atom::value, from_proto(req))
      .then(
          [rp](const log_chunk& chunk) mutable { rp.deliver(to_proto(chunk).SerializeAsString()); },
          [rp](caf::error&) mutable { rp.deliver(to_proto(log_chunk::retry_later()).SerializeAsString()); });
  return rp;
}

std::string on_read(self_ptr self, const std::string& bytes) {
  proto::ReadRequest r;
  if (!parse(bytes, &r)) return std::string{};
  auto& st = self->state;
  auto max = std::min<std::uint32_t>(r.max_events(), 10000);
  auto after = r.after_seq();
  if (r.tail()) {
    std::optional<persistence::stream_meta> meta;
    if (st.cfg.store->get_stream(r.tenant(), r.stream(), &meta).ok() && meta)
      after = meta->head_seq > max ? meta->head_seq - max : 0;
  }
  return to_proto(read_chunk(*st.cfg.store, {r.tenant(), r.stream()}, st.table.self().id, after, max))
      .SerializeAsString();
}

void rebalance(self_ptr self) {
  // After a short quiet time: a join or a drain changes membership on every
  // node within one gossip round.
  self->delayed_send(self, std::chrono::milliseconds(300), rebalance_atom::value,
                     ++self->state.rebalance_generation);
}

void on_rebalance(self_ptr self, std::uint64_t generation) {
  auto& st = self->state;
  if (generation != st.rebalance_generation) return;
  // Draining, the handoff acts on it only while it hands over.
  self->send(st.handoff, rebalance_atom::value);
  if (st.draining) return;
  return_sources(self);
  self->send(st.watch_mover, returns_atom::value);
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
  self->send(st.handoff, drain_atom::value);
  // Everyone stops placing keys here: the record says so, and each peer
  // hears it directly first, ahead of the watches this node hands over.
  for (auto& [id, handle] : st.handles) self->send(handle, draining_atom::value, me.id, me.incarnation);
  // Watches and sources go first: their streams stay pinned here while
  // they run.
  on_change(self);
  auto rp = self->make_response_promise<std::string>();
  move_out(self, [self, rp]() mutable {
    // This node's hubs move now; rebalances already due are the handoff's.
    ++self->state.rebalance_generation;
    self->request(self->state.handoff, caf::infinite, handover_atom::value)
        .then([rp](std::uint64_t left) mutable { rp.deliver(std::to_string(left)); },
              [self, rp](caf::error& err) mutable { rp.deliver(self->system().render(err)); });
  });
  return rp;
}

}  // namespace tidings::cluster
