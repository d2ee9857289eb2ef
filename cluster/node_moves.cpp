// Watches and sources follow membership (ADR 0016).
//
// - Every member sends its watch specs to the others whenever they change
//   (WatchCopies). When a member is lost, its copies become orphans on every
//   survivor; the survivor that now owns "watch:<name>" starts each one, and
//   all of them keep the orphan until they see it run somewhere (so a start
//   that failed, or views that disagreed, are tried again).
// - Two members running one watch (a lost member that came back, a hung
//   one that resumed) keep it where rendezvous hashing over the two puts
//   it; the other stops its own. A copy that does not run never wins.
// - A draining member releases each watch (pending notices out with their
//   position, spec kept), starts it on its new owner with that position and
//   forgets it only once the new owner runs it. It also closes its sources
//   so that their streams move with their logs; the members holding leases
//   there subscribe again at the new owners (cluster_view::follow_sources).

#include <memory>

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "core/watch_uri.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = node_actor*;

// Reading a baseline and the filter's first run may take a while (the
// manager's own deadline is 30 s).
constexpr auto adopt_timeout = std::chrono::seconds(40);
// A drain moves watches and sources first, then streams (drain_for): the
// caller waits for both (cluster_member::drain).
constexpr auto move_out_for = std::chrono::seconds(8);

// A task that runs `fn` inside the node actor, from any thread.
actors::actor_task in_node(self_ptr self, std::function<void()> fn) {
  caf::actor me = caf::actor_cast<caf::actor>(self);
  return actors::actor_task{
      [me, fn = std::move(fn)] { caf::anon_send(me, actors::task_atom::value, actors::actor_task{fn}); }};
}

std::string placement_key(const std::string& name) {
  return core::watch_notice_stream(name);
}

// Starts a watch moved here (no dry run, no cap), resuming from its
// position when the copy carries one.
void start_adopted(self_ptr self, const proto::WatchStart& p, const char* why) {
  auto req = std::make_shared<actors::watch_start_request>();
  req->spec = spec_of(p);
  req->adopt = true;
  if (p.has_progress()) req->progress = progress_of(p.progress());
  persistence::watch_id id{p.tenant(), p.name()};
  auto permanent = std::make_shared<bool>(false);
  auto done = in_node(self, [self, id, permanent] {
    self->state.adopting.erase(id);
    if (*permanent) self->state.orphans.erase(id);  // it would never start
    sync_watch_copies(self);
  });
  req->reply = [name = p.name(), why, done, permanent](const actors::watch_start_reply& r) {
    if (r.error) {
      *permanent = r.error->kind == actors::watch_error_kind::bad_request;
      logging::error("cluster.watch_adopt_failed",
                     {{"watch", name}, {"why", why}, {"error", r.error->message}});
    } else {
      logging::info("cluster.watch_adopted", {{"watch", name}, {"why", why}});
    }
    done.run();
  };
  self->send(self->state.cfg.watches, actors::start_atom::value,
             actors::watch_start_request_ptr(std::move(req)));
}

// Stops this node's copy of a watch (a duplicate, or one moved away);
// `then` runs in the node once it is gone.
void stop_here(self_ptr self, const persistence::watch_id& id, std::function<void()> then) {
  auto req = std::make_shared<actors::watch_stop_request>();
  req->id = id;
  auto done = in_node(self, std::move(then));
  req->reply = [done](const std::optional<actors::watch_error>&, bool) { done.run(); };
  self->send(self->state.cfg.watches, actors::stop_atom::value,
             actors::watch_stop_request_ptr(std::move(req)));
}

// A watch this node runs that an up, not draining member runs too: the one
// rendezvous hashing over the two picks keeps it, the other stops its own.
// A copy that is not running (failed, moving away) never wins over one
// that is.
void resolve_duplicates(self_ptr self) {
  auto& st = self->state;
  if (st.draining) return;
  const auto& me = st.table.self().id;
  for (const auto& [holder, list] : st.watch_copies) {
    auto m = st.table.find(holder);
    if (!m || m->draining || st.table.state(holder) != member_state::up) continue;
    for (const auto& w : list.watches()) {
      persistence::watch_id id{w.tenant(), w.name()};
      auto mine = st.local_watches.find(id);
      if (mine == st.local_watches.end() || st.yielding.contains(id) || !w.running()) continue;
      std::vector<std::string> both{me, holder};
      if (mine->second && core::owner_of(both, id.tenant, placement_key(id.name)) == me) continue;
      st.yielding.insert(id);
      logging::warn("cluster.watch_duplicate", {{"watch", id.name}, {"kept_on", holder}});
      stop_here(self, id, [self, id] {
        self->state.yielding.erase(id);
        sync_watch_copies(self);
      });
    }
  }
}

// Whether some member's latest copy (this node's included) has `id` running.
bool running_somewhere(const node_state& st, const persistence::watch_id& id) {
  if (auto mine = st.local_watches.find(id); mine != st.local_watches.end() && mine->second) return true;
  for (const auto& [holder, list] : st.watch_copies)
    for (const auto& w : list.watches())
      if (w.running() && w.tenant() == id.tenant && w.name() == id.name) return true;
  return false;
}

// Hands one released watch to `target` and forgets it here once the target
// runs it; `done` runs in the node either way. A failed hand-over keeps it
// stored and listed here as "moving", in the copies the others keep.
void hand_over(self_ptr self, const caf::actor& target, const std::string& owner,
               const std::shared_ptr<proto::WatchStart>& moved, const std::function<void(bool)>& done) {
  persistence::watch_id id{moved->tenant(), moved->name()};
  self->request(target, adopt_timeout, wstart_here_atom::value, moved->SerializeAsString())
      .then(
          [self, id, owner, done](const std::string& bytes) {
            proto::WatchStartReply r;
            if (!parse(bytes, &r) || !r.ok()) {
              logging::error("cluster.watch_move_failed",
                             {{"watch", id.name}, {"to", owner}, {"error", r.error()}});
              return done(false);
            }
            logging::info("cluster.watch_moved", {{"watch", id.name}, {"to", owner}});
            stop_here(self, id, [self, done] {
              sync_watch_copies(self);
              done(true);
            });
          },
          [self, id, owner, done](caf::error& err) {
            logging::error("cluster.watch_move_failed",
                           {{"watch", id.name}, {"to", owner}, {"error", self->system().render(err)}});
            done(false);
          });
}

// Releases a watch this node runs (pending notices out, position read) and
// hands it to `owner`. `done` runs in the node either way, with what was
// handed when the hand-over failed (null when it succeeded or nothing was
// released).
void release_to(self_ptr self, const persistence::watch_id& id, const std::string& owner,
                const caf::actor& target,
                const std::function<void(const std::shared_ptr<proto::WatchStart>&)>& done) {
  auto release = std::make_shared<actors::watch_release_request>();
  release->id = id;
  auto moved = std::make_shared<proto::WatchStart>();
  auto released = in_node(self, [self, target, owner, moved, done] {
    if (moved->name().empty()) return done(nullptr);  // not released (busy, gone)
    hand_over(self, target, owner, moved, [moved, done](bool ok) { done(ok ? nullptr : moved); });
  });
  release->reply = [moved, released, name = id.name](
                       const std::optional<actors::watch_error>& error,
                       const std::optional<persistence::watch_spec>& spec,
                       const std::optional<persistence::watch_progress>& progress) {
    if (error || !spec) {
      logging::warn("cluster.watch_not_moved", {{"watch", name}, {"why", error ? error->message : "gone"}});
    } else {
      *moved = to_proto(*spec);
      moved->set_adopt(true);
      if (progress) *moved->mutable_progress() = to_proto(*progress);
    }
    released.run();
  };
  self->send(self->state.cfg.watches, actors::release_atom::value,
             actors::watch_release_request_ptr(std::move(release)));
}

// Sends `bytes` (this node's copies or pins) to every up peer unless each
// of them has it already: new peers (or restarted ones, a new handle) get
// it even when nothing changed here.
template <class Atom>
void send_if_changed(self_ptr self, Atom atom, const std::string& bytes, std::string& sent,
                     std::set<caf::actor_addr>& sent_to) {
  auto& st = self->state;
  std::set<caf::actor_addr> peers;
  for (const auto& [id, handle] : st.handles)
    if (st.table.state(id) == member_state::up) peers.insert(handle.address());
  if (bytes == sent && peers == sent_to) return;
  for (const auto& [id, handle] : st.handles)
    if (st.table.state(id) == member_state::up) self->send(handle, atom, bytes);
  sent = bytes;
  sent_to = std::move(peers);
}

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
  send_if_changed(self, pins_atom::value, pins.SerializeAsString(), st.pins_sent, st.pins_peers);
}

void on_peer_pins(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::Pins pins;
  if (!parse(bytes, &pins) || pins.holder().empty() || pins.holder() == st.table.self().id) return;
  std::set<actors::stream_key> keys;
  for (const auto& k : pins.keys()) keys.insert({k.tenant(), k.stream()});
  // Streams pinned elsewhere are read and written there: relays follow.
  if (st.cfg.view->set_pins(pins.holder(), std::move(keys))) st.cfg.hubs->reroute();
}

void sync_watch_copies(self_ptr self) {
  auto& st = self->state;
  sync_pins(self);
  if (!st.cfg.watches) return;
  auto req = std::make_shared<actors::watch_specs_request>();
  caf::actor me = caf::actor_cast<caf::actor>(self);
  req->reply = [me, id = st.table.self().id](const std::vector<actors::watch_spec_state>& specs,
                                             bool restored) {
    proto::WatchCopies copies;
    copies.set_holder(id);
    copies.set_restored(restored);
    for (const auto& s : specs) {
      auto* w = copies.add_watches();
      *w = to_proto(s.spec);
      w->set_running(s.state == "running");
    }
    caf::anon_send(me, copies_atom::value, copies.SerializeAsString());
  };
  self->send(st.cfg.watches, actors::specs_atom::value, actors::watch_specs_request_ptr(std::move(req)));
}

void on_own_copies(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::WatchCopies copies;
  if (!parse(bytes, &copies)) return;
  st.local_watches.clear();
  for (const auto& w : copies.watches()) st.local_watches[{w.tenant(), w.name()}] = w.running();
  send_if_changed(self, wcopy_atom::value, bytes, st.copies_sent, st.copies_peers);
  resolve_duplicates(self);
  adopt_orphans(self);
}

void on_peer_copies(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::WatchCopies copies;
  if (!parse(bytes, &copies) || copies.holder().empty() || copies.holder() == st.table.self().id) return;
  auto holder = copies.holder();
  st.watch_copies[holder] = std::move(copies);
  resolve_duplicates(self);
  return_watches(self);
}

void watches_lost_with(self_ptr self, const std::string& lost) {
  auto& st = self->state;
  auto it = st.watch_copies.find(lost);
  if (it == st.watch_copies.end()) return;
  // A drained member's copy may still list what it handed over: those run
  // on their new owners already and are dropped once seen there.
  for (auto& w : *it->second.mutable_watches()) {
    persistence::watch_id id{w.tenant(), w.name()};  // before `w` is moved from
    st.orphans[id] = {lost, std::move(w)};
  }
  st.watch_copies.erase(it);
  adopt_orphans(self);
}

void adopt_orphans(self_ptr self) {
  auto& st = self->state;
  if (st.draining || !st.cfg.watches) return;
  for (auto it = st.orphans.begin(); it != st.orphans.end();) {
    const auto& id = it->first;
    if (running_somewhere(st, id)) {
      it = st.orphans.erase(it);
      continue;
    }
    // Each survivor keeps the copy until it sees the watch run somewhere;
    // only the one that owns it now starts it (again, if a start failed).
    if (!st.adopting.contains(id) && st.cfg.view->owner_of(id.tenant, placement_key(id.name)).empty()) {
      logging::warn("cluster.watch_failover", {{"watch", id.name}, {"from", it->second.first}});
      st.adopting.insert(id);
      start_adopted(self, it->second.second, "its node was lost");
    }
    ++it;
  }
}

namespace {

// Whether `owner` is a member a watch can be handed to now, and has said
// what it runs since it restored its own store (so a watch it restores
// itself is settled as a duplicate instead).
bool ready_to_take(const node_state& st, const std::string& owner, const persistence::watch_id& id) {
  auto m = st.table.find(owner);
  if (!m || m->draining || st.table.state(owner) != member_state::up || !st.handles.contains(owner))
    return false;
  auto copies = st.watch_copies.find(owner);
  if (copies == st.watch_copies.end() || !copies->second.restored()) return false;
  for (const auto& w : copies->second.watches())
    if (w.tenant() == id.tenant && w.name() == id.name) return false;
  return true;
}

// A failed return is not tried again at once: the owner may refuse every
// time, and each try pauses the watch.
constexpr auto return_pause = std::chrono::seconds(30);

}  // namespace

void return_watches(self_ptr self) {
  auto& st = self->state;
  if (st.draining || !st.cfg.watches) return;
  auto live = st.cfg.view->current()->live;
  const auto& me = st.table.self().id;
  for (const auto& [listed, running] : st.local_watches) {
    const persistence::watch_id id = listed;  // (a lambda below keeps it)
    if (!running || st.yielding.contains(id) || st.returning.contains(id) || st.adopting.contains(id))
      continue;
    // Placement ignoring pins: this node's own pin would keep it here.
    auto owner = core::owner_of(live, id.tenant, placement_key(id.name));
    if (owner.empty() || owner == me || !ready_to_take(st, owner, id)) continue;
    st.returning.insert(id);
    logging::info("cluster.watch_returning", {{"watch", id.name}, {"to", owner}});
    release_to(self, id, owner, st.handles.at(owner),
               [self, id](const std::shared_ptr<proto::WatchStart>& kept) {
                 if (!kept) {
                   self->state.returning.erase(id);
                   return sync_watch_copies(self);
                 }
                 // Released but not taken: it runs here again, from the
                 // position its release stored.
                 start_adopted(self, *kept, "its return failed");
                 self->delayed_send(self, return_pause, actors::task_atom::value,
                                    actors::actor_task{[self, id] { self->state.returning.erase(id); }});
               });
  }
}

void move_out(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  // Runs `then` once everything is moved, or after move_out_for whatever
  // is left (a hand-over or a source that does not end).
  struct countdown {
    std::size_t left = 1;
    std::function<void()> then;
    void done() {
      if (--left == 0) fire();
    }
    void fire() {
      if (!then) return;
      auto fn = std::move(then);
      then = nullptr;
      fn();
    }
  };
  auto g = std::make_shared<countdown>();
  g->then = std::move(then);
  self->delayed_send(self, move_out_for, actors::task_atom::value, actors::actor_task{[g] {
                       if (g->then) logging::warn("cluster.move_out_timeout", {});
                       g->fire();
                     }});
  if (st.cfg.sources) {
    ++g->left;
    self->send(st.cfg.sources, actors::source_handoff_atom::value, in_node(self, [g] { g->done(); }));
  }
  if (!st.cfg.watches) return g->done();
  ++g->left;
  auto req = std::make_shared<actors::watch_specs_request>();
  auto listed = std::make_shared<std::vector<actors::watch_spec_state>>();
  auto next = in_node(self, [self, g, listed] {
    auto& st = self->state;
    for (const auto& [spec, state] : *listed) {
      auto owner = st.cfg.view->owner_of(spec.id.tenant, placement_key(spec.id.name));
      auto target = st.handles.find(owner);
      if (owner.empty() || target == st.handles.end()) {
        logging::warn("cluster.watch_not_moved", {{"watch", spec.id.name}, {"why", "no member to take it"}});
        continue;
      }
      ++g->left;
      release_to(self, spec.id, owner, target->second,
                 [g](const std::shared_ptr<proto::WatchStart>&) { g->done(); });
    }
    g->done();
  });
  req->reply = [listed, next](std::vector<actors::watch_spec_state> specs, bool) {
    *listed = std::move(specs);
    next.run();
  };
  self->send(st.cfg.watches, actors::specs_atom::value, actors::watch_specs_request_ptr(std::move(req)));
  g->done();
}

}  // namespace tidings::cluster
