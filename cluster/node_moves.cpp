// What this node keeps here whatever placement says, and what a drain moves
// out (ADR 0016):
// - Pins: the streams a watch or source running here writes stay here;
//   every member tells the others which, and they route those streams here.
// - A draining member has the watch mover release every watch to its new
//   owner and closes its sources, so that their streams move with their
//   logs; the members holding leases there subscribe again at the new
//   owners (cluster_view::follow_sources).
// Where watches go as members come and go is the watch mover's
// (watch_mover.hpp).

#include <algorithm>
#include <memory>
#include <utility>

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "core/stream_name.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = node_actor*;

// A drain moves watches and sources first, then streams (drain_for): the
// caller waits for both (cluster_member::drain). The watch mover bounds
// its own part by the same time.
constexpr auto move_out_for = std::chrono::seconds(8);
// How long a returned source is listed in this node's pins (a hold that
// saw it keeps following until it moved, ADR 0016), and how long its
// close may take.
constexpr auto returns_told_for = std::chrono::seconds(60);
constexpr auto return_for = std::chrono::seconds(30);

}  // namespace

void sync_pins(self_ptr self) {
  auto& st = self->state;
  proto::Pins pins;
  pins.set_holder(st.table.self().id);
  for (const auto& key : st.cfg.hubs->pinned_keys()) {
    auto* k = pins.add_keys();
    k->set_tenant(key.tenant);
    k->set_stream(key.name);
  }
  // Returned sources are told for a while: long enough for every holder
  // to follow, or to hear it again from the tenth tick's resend.
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(st.returns.done, [&](const auto& entry) {
    return now - entry.second > returns_told_for || st.cfg.hubs->pinned(entry.first);
  });
  std::set<actors::stream_key> returned;
  for (const auto& [key, at] : st.returns.done) {
    auto* k = pins.add_returned();
    k->set_tenant(key.tenant);
    k->set_stream(key.name);
    returned.insert(key);
  }
  const bool returns_changed = st.cfg.view->set_returned("", std::move(returned));
  // To every up peer unless each of them has it already: new peers (or
  // restarted ones, a new handle) get it even when nothing changed here.
  auto bytes = pins.SerializeAsString();
  std::set<caf::actor_addr> peers;
  for (const auto& [id, handle] : st.handles)
    if (st.table.state(id) == member_state::up) peers.insert(handle.address());
  if (bytes != st.pins_sent || peers != st.pins_peers) {
    for (const auto& [id, handle] : st.handles)
      if (st.table.state(id) == member_state::up) self->send(handle, pins_atom::value, bytes);
    st.pins_sent = std::move(bytes);
    st.pins_peers = std::move(peers);
  }
  // The holds here follow a return after the peers were told of the unpin
  // (the owner refuses a source whose stream it sees pinned elsewhere).
  if (returns_changed) st.cfg.view->follow_sources(false);
}

void on_peer_pins(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::Pins pins;
  if (!parse(bytes, &pins) || pins.holder().empty() || pins.holder() == st.table.self().id) return;
  std::set<actors::stream_key> keys;
  for (const auto& k : pins.keys()) keys.insert({k.tenant(), k.stream()});
  std::set<actors::stream_key> returned;
  for (const auto& k : pins.returned()) returned.insert({k.tenant(), k.stream()});
  // Streams pinned elsewhere are read and written there: relays follow.
  if (st.cfg.view->set_pins(pins.holder(), std::move(keys))) st.cfg.hubs->reroute();
  // Sources returned to their owners: the holds here follow them (after
  // the pins, so that they ask where the stream is owned now).
  if (st.cfg.view->set_returned(pins.holder(), std::move(returned))) st.cfg.view->follow_sources(false);
}

void return_sources(self_ptr self) {
  auto& st = self->state;
  // Not while this node's registration lapsed (a pause): it owns nothing
  // then, and placement without it is not where the sources belong.
  if (!st.cfg.sources || st.draining || !st.table.is_member()) return;
  auto m = st.cfg.view->current();
  if (!std::binary_search(m->live.begin(), m->live.end(), m->self_id)) return;
  for (const auto& key : st.cfg.hubs->pinned_keys()) {
    if (!key.name.starts_with(core::source_stream_prefix) || st.returns.asked.contains(key)) continue;
    auto placed = core::owner_of(m->live, key.tenant, key.name);
    if (placed.empty() || placed == m->self_id || !m->node_of(placed)) continue;
    logging::info("cluster.source_return", {{"tenant", key.tenant}, {"stream", key.name}, {"to", placed}});
    st.returns.asked.insert(key);
    self->request(st.cfg.sources, return_for, actors::source_return_atom::value, key.tenant, key.name)
        .then(
            [self, key](bool closed) {
              auto& st = self->state;
              st.returns.asked.erase(key);
              // Only a source this return closed: one that failed meanwhile
              // must not be started elsewhere by its holds.
              if (closed && !st.cfg.hubs->pinned(key))
                st.returns.done[key] = std::chrono::steady_clock::now();
              sync_pins(self);
              // Its log goes to the owner too, as the rebalance hands it.
              rebalance(self);
            },
            [self, key](caf::error&) { self->state.returns.asked.erase(key); });
  }
}

void move_out(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  // Runs `then` once the watches and sources are out, or after
  // move_out_for whatever is left (a source that does not end).
  auto once = std::make_shared<std::function<void()>>(std::move(then));
  auto fire = [once] {
    if (auto fn = std::exchange(*once, nullptr)) fn();
  };
  auto left = std::make_shared<int>(2);
  auto done = [left, fire] {
    if (--*left == 0) fire();
  };
  self->delayed_send(self, move_out_for, actors::task_atom::value, actors::actor_task{[once, fire] {
                       if (*once) logging::warn("cluster.move_out_timeout", {});
                       fire();
                     }});
  if (st.cfg.sources)
    self->send(st.cfg.sources, actors::source_handoff_atom::value,
               actors::continue_in(caf::actor_cast<caf::actor>(self), done));
  else
    done();
  self->request(st.watch_mover, move_out_for + std::chrono::seconds(1), move_out_atom::value)
      .then([done](bool) { done(); }, [done](caf::error&) { done(); });
}

}  // namespace tidings::cluster
