#include "cluster/watch_mover.hpp"

#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "core/watch_uri.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = watch_mover_actor::stateful_pointer<watch_mover_state>;

// Reading a baseline and the filter's first run may take a while (the
// manager's own deadline is 30 s).
constexpr auto adopt_timeout = std::chrono::seconds(40);
// A drain moves watches and sources first, then streams: the caller waits
// for both (cluster_member::drain).
constexpr auto move_out_for = std::chrono::seconds(8);
// A failed return is not tried again at once: the owner may refuse every
// time, and each try pauses the watch.
constexpr auto return_pause = std::chrono::seconds(30);
// How long a starting node's restore waits for the up members' copies
// (they send them once they see it): past that it restores what it has,
// and two copies settle as duplicates.
constexpr auto restore_wait = std::chrono::seconds(3);

// A task that runs `fn` inside this actor, from any thread.
actors::actor_task in_mover(self_ptr self, std::function<void()> fn) {
  return actors::continue_in(watch_mover_actor{self}, std::move(fn));
}

std::string placement_key(const std::string& name) {
  return core::watch_notice_stream(name);
}

// An up member other than this node, or null.
const mover_members::peer* peer_of(const watch_mover_state& st, const std::string& id) {
  auto it = st.members->up.find(id);
  return it == st.members->up.end() ? nullptr : &it->second;
}

void sync(self_ptr self);

// Starts a watch moved here (no dry run, no cap), resuming from its
// position when the copy carries one.
void start_adopted(self_ptr self, const proto::WatchStart& p, const char* why) {
  auto req = std::make_shared<actors::watch_start_request>();
  req->spec = spec_of(p);
  req->adopt = true;
  if (p.has_progress()) req->progress = progress_of(p.progress());
  persistence::watch_id id{p.tenant(), p.name()};
  auto permanent = std::make_shared<bool>(false);
  auto done = in_mover(self, [self, id, permanent] {
    self->state.adopting.erase(id);
    if (*permanent) self->state.orphans.erase(id);  // it would never start
    sync(self);
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

// Stops this node's copy of a watch (one moved away, or a `duplicate` of
// one another member keeps); `then` runs in this actor once it is gone.
void stop_here(self_ptr self, const persistence::watch_id& id, std::function<void()> then,
               bool duplicate = false) {
  auto req = std::make_shared<actors::watch_stop_request>();
  req->id = id;
  // A duplicate's notices would wait on a stream the kept copy's member
  // holds (pinned by that copy, it refuses this node's appends): the stop
  // must not wait for them.
  req->duplicate = duplicate;
  auto done = in_mover(self, std::move(then));
  req->reply = [done](const std::optional<actors::watch_error>&, bool) { done.run(); };
  self->send(self->state.cfg.watches, actors::stop_atom::value,
             actors::watch_stop_request_ptr(std::move(req)));
}

// A watch this node runs that an up, not draining member runs too: the one
// rendezvous hashing over the two picks keeps it, the other stops its own.
// A copy that is not running (failed, moving away) never wins over one
// that is. Only copies heard since the watch runs here count: one from
// before may be from the member that has just handed it here.
void resolve_duplicates(self_ptr self) {
  auto& st = self->state;
  if (st.draining) return;
  const auto& me = st.cfg.self_id;
  for (const auto& [holder, theirs] : st.copies) {
    const auto* peer = peer_of(st, holder);
    if (!peer || peer->draining) continue;
    for (const auto& w : theirs.list.watches()) {
      persistence::watch_id id{w.tenant(), w.name()};
      auto mine = st.local.find(id);
      if (mine == st.local.end() || st.yielding.contains(id) || !w.running()) continue;
      if (mine->second.running && theirs.heard <= mine->second.since) continue;
      std::vector<std::string> both{me, holder};
      if (mine->second.running && core::owner_of(both, id.tenant, placement_key(id.name)) == me) continue;
      st.yielding.insert(id);
      logging::warn("cluster.watch_duplicate", {{"watch", id.name}, {"kept_on", holder}});
      stop_here(
          self, id,
          [self, id] {
            self->state.yielding.erase(id);
            sync(self);
          },
          true);
    }
  }
}

// Whether some member's latest copy (this node's included) has `id` running.
bool running_somewhere(const watch_mover_state& st, const persistence::watch_id& id) {
  if (auto mine = st.local.find(id); mine != st.local.end() && mine->second.running) return true;
  for (const auto& [holder, theirs] : st.copies)
    for (const auto& w : theirs.list.watches())
      if (w.running() && w.tenant() == id.tenant && w.name() == id.name) return true;
  return false;
}

// Starts the orphans this node owns now (and drops those running again).
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
    if (!st.adopting.contains(id) && st.cfg.owner_of(id.tenant, placement_key(id.name)).empty()) {
      logging::warn("cluster.watch_failover", {{"watch", id.name}, {"from", it->second.first}});
      st.adopting.insert(id);
      start_adopted(self, it->second.second, "its node was lost");
    }
    ++it;
  }
}

// Hands one released watch to `target` and forgets it here once the target
// runs it; `done(ok)` runs in this actor either way. A failed hand-over
// keeps it stored and listed here as "moving", in the copies the others
// keep.
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
              sync(self);
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
// hands it to `owner`. `done` runs in this actor either way, with what was
// handed when the hand-over failed (null when it succeeded or nothing was
// released).
void release_to(self_ptr self, const persistence::watch_id& id, const std::string& owner,
                const caf::actor& target,
                const std::function<void(const std::shared_ptr<proto::WatchStart>&)>& done) {
  auto release = std::make_shared<actors::watch_release_request>();
  release->id = id;
  auto moved = std::make_shared<proto::WatchStart>();
  auto released = in_mover(self, [self, target, owner, moved, done] {
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

// Whether `owner` is a member a watch can be handed to now, and has said
// what it runs since it restored its own store (so a watch it restores
// itself is settled as a duplicate instead).
bool ready_to_take(const watch_mover_state& st, const std::string& owner, const persistence::watch_id& id) {
  const auto* peer = peer_of(st, owner);
  if (!peer || peer->draining || !peer->node) return false;
  auto copies = st.copies.find(owner);
  if (copies == st.copies.end() || !copies->second.list.restored()) return false;
  for (const auto& w : copies->second.list.watches())
    if (w.tenant() == id.tenant && w.name() == id.name) return false;
  return true;
}

// Hands each watch this node runs to the member placement puts it on, once
// that member is up and has restored its own (a join, a return).
void return_watches(self_ptr self) {
  auto& st = self->state;
  if (st.draining || !st.cfg.watches) return;
  for (const auto& [listed, copy] : st.local) {
    const persistence::watch_id id = listed;  // (a lambda below keeps it)
    if (!copy.running || st.yielding.contains(id) || st.returning.contains(id) || st.adopting.contains(id))
      continue;
    // Placement ignoring pins: this node's own pin would keep it here.
    auto owner = core::owner_of(st.members->placement, id.tenant, placement_key(id.name));
    if (owner.empty() || owner == st.cfg.self_id || !ready_to_take(st, owner, id)) continue;
    st.returning.insert(id);
    logging::info("cluster.watch_returning", {{"watch", id.name}, {"to", owner}});
    release_to(self, id, owner, peer_of(st, owner)->node,
               [self, id](const std::shared_ptr<proto::WatchStart>& kept) {
                 if (!kept) {
                   self->state.returning.erase(id);
                   return sync(self);
                 }
                 // Released but not taken: it runs here again, from the position its
                 // release stored.
                 start_adopted(self, *kept, "its return failed");
                 self->delayed_send(self, return_pause, actors::task_atom::value,
                                    actors::actor_task{[self, id] { self->state.returning.erase(id); }});
               });
  }
}

// Sends our copies to every up peer unless each of them has them already:
// new peers (or restarted ones, a new handle) get them even when nothing
// changed here.
void send_if_changed(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  std::set<caf::actor_addr> peers;
  for (const auto& [id, peer] : st.members->up)
    if (peer.node) peers.insert(peer.node.address());
  if (bytes == st.sent && peers == st.sent_to) return;
  for (const auto& [id, peer] : st.members->up)
    if (peer.node) caf::anon_send(peer.node, wcopy_atom::value, bytes);
  st.sent = bytes;
  st.sent_to = std::move(peers);
}

// Reads this node's specs; they come back as copies_atom. What the node
// pins may have changed with them.
void sync(self_ptr self) {
  auto& st = self->state;
  caf::anon_send(st.cfg.node, pins_due_atom::value);
  if (!st.cfg.watches) return;  // this node runs no watches
  auto req = std::make_shared<actors::watch_specs_request>();
  watch_mover_actor me = self;
  req->reply = [me, id = st.cfg.self_id](const std::vector<actors::watch_spec_state>& specs, bool restored) {
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

// Has the watch manager restore its stored watches, leaving alone those an
// up member runs now, once every up member's copies are here (or, when
// `waited`, with what is here).
void restore_when_known(self_ptr self, bool waited) {
  auto& st = self->state;
  if (!st.restore_due) return;
  std::vector<std::string> unheard;
  for (const auto& [id, peer] : st.members->up)
    if (!st.copies.contains(id)) unheard.push_back(id);
  if (!unheard.empty() && !waited) return;
  st.restore_due = false;
  for (const auto& id : unheard) logging::warn("cluster.restore_unheard", {{"node", id}});
  auto plan = std::make_shared<actors::watch_restore_plan>();
  for (const auto& [holder, theirs] : st.copies)
    for (const auto& w : theirs.list.watches())
      if (w.running()) plan->running_elsewhere[{w.tenant(), w.name()}] = holder;
  self->send(st.cfg.watches, actors::restore_atom::value, actors::watch_restore_plan_ptr(std::move(plan)));
}

void on_own_copies(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::WatchCopies copies;
  if (!parse(bytes, &copies)) return;
  std::map<persistence::watch_id, watch_mover_state::local_copy> local;
  for (const auto& w : copies.watches()) {
    persistence::watch_id id{w.tenant(), w.name()};
    auto before = st.local.find(id);
    const bool ran = before != st.local.end() && before->second.running;
    local[id] = {w.running(), ran ? before->second.since : st.heard};
  }
  st.local = std::move(local);
  send_if_changed(self, bytes);
  resolve_duplicates(self);
  adopt_orphans(self);
}

void on_peer_copies(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::WatchCopies copies;
  if (!parse(bytes, &copies) || copies.holder().empty() || copies.holder() == st.cfg.self_id) return;
  auto holder = copies.holder();
  st.copies[holder] = {std::move(copies), ++st.heard};
  restore_when_known(self, false);
  resolve_duplicates(self);
  return_watches(self);
}

void on_member_gone(self_ptr self, const std::string& lost) {
  auto& st = self->state;
  auto it = st.copies.find(lost);
  if (it == st.copies.end()) return;
  // A drained member's copy may still list what it handed over: those run
  // on their new owners already and are dropped once seen there.
  for (auto& w : *it->second.list.mutable_watches()) {
    persistence::watch_id id{w.tenant(), w.name()};  // before `w` is moved from
    st.orphans[id] = {lost, std::move(w)};
  }
  st.copies.erase(it);
  adopt_orphans(self);
}

caf::result<bool> move_out(self_ptr self) {
  auto& st = self->state;
  st.draining = true;
  auto rp = self->make_response_promise<bool>();
  // Answers once everything is moved, or after move_out_for whatever is
  // left (a hand-over that does not end).
  struct countdown {
    std::size_t left = 1;
    caf::typed_response_promise<bool> rp;
    bool answered = false;
    void done() {
      if (--left == 0) fire(true);
    }
    void fire(bool all) {
      if (answered) return;
      answered = true;
      rp.deliver(all);
    }
  };
  auto g = std::make_shared<countdown>();
  g->rp = rp;
  self->delayed_send(self, move_out_for, actors::task_atom::value, actors::actor_task{[g] {
                       if (!g->answered) logging::warn("cluster.move_out_timeout", {});
                       g->fire(false);
                     }});
  if (!st.cfg.watches) {
    g->done();
    return rp;
  }
  ++g->left;
  auto req = std::make_shared<actors::watch_specs_request>();
  auto listed = std::make_shared<std::vector<actors::watch_spec_state>>();
  auto next = in_mover(self, [self, g, listed] {
    auto& st = self->state;
    for (const auto& [spec, state] : *listed) {
      auto owner = st.cfg.owner_of(spec.id.tenant, placement_key(spec.id.name));
      const auto* peer = owner.empty() ? nullptr : peer_of(st, owner);
      if (!peer || !peer->node) {
        logging::warn("cluster.watch_not_moved", {{"watch", spec.id.name}, {"why", "no member to take it"}});
        continue;
      }
      ++g->left;
      release_to(self, spec.id, owner, peer->node,
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
  return rp;
}

}  // namespace

watch_mover_actor::behavior_type watch_mover(watch_mover_actor::stateful_pointer<watch_mover_state> self,
                                             watch_mover_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
      [self](members_atom, const mover_members_ptr& members) {
        self->state.members = members;
        restore_when_known(self, false);
        sync(self);
      },
      [self](member_gone_atom, const std::string& id) { on_member_gone(self, id); },
      [self](wcopy_atom, const std::string& bytes) { on_peer_copies(self, bytes); },
      [self](copies_atom, const std::string& bytes) { on_own_copies(self, bytes); },
      [self](tick_atom, bool again) {
        if (again) self->state.sent.clear();
        sync(self);
      },
      [self](stopping_atom, const std::string& tenant, const std::string& name) {
        self->state.orphans.erase({tenant, name});
        return true;
      },
      [self](returns_atom) { return_watches(self); },
      [self](restore_watches_atom) {
        if (!self->state.cfg.watches) return;
        self->state.restore_due = true;
        self->delayed_send(self, restore_wait, actors::task_atom::value,
                           actors::actor_task{[self] { restore_when_known(self, true); }});
        restore_when_known(self, false);
      },
      [self](move_out_atom) { return move_out(self); },
      [self](stats_atom) {
        std::uint64_t n = 0;
        for (const auto& [holder, theirs] : self->state.copies)
          n += static_cast<std::uint64_t>(theirs.list.watches_size());
        return n;
      },
      [](actors::task_atom, const actors::actor_task& task) {
        if (task.run) task.run();
      },
  };
}

}  // namespace tidings::cluster
