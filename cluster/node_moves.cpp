// Watches and sources follow membership (ADR 0016).
//
// - Every member sends its watch specs to the others whenever they change
//   (WatchCopies). When a member is lost, the survivor that now owns
//   "watch:<name>" starts each of its watches from that copy.
// - Two members running one watch (a lost member that came back, a hung
//   one that resumed) keep it where rendezvous hashing over the two puts
//   it; the other stops its own.
// - A draining member releases its watches (pending notices out, position
//   read) and starts them on their new owners with that position, and
//   closes its sources so that their streams move with their logs; the
//   members holding leases there subscribe again at the new owners
//   (cluster_view::follow_sources).

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
  auto done = in_node(self, [self] { sync_watch_copies(self); });
  req->reply = [name = p.name(), why, done](const actors::watch_start_reply& r) {
    if (r.error)
      logging::error("cluster.watch_adopt_failed",
                     {{"watch", name}, {"why", why}, {"error", r.error->message}});
    else
      logging::info("cluster.watch_adopted", {{"watch", name}, {"why", why}});
    done.run();
  };
  self->send(self->state.cfg.watches, actors::start_atom::value,
             actors::watch_start_request_ptr(std::move(req)));
}

// A watch this node runs that an up, not draining member runs too: the one
// rendezvous hashing over the two picks keeps it, the other stops its own.
void resolve_duplicates(self_ptr self) {
  auto& st = self->state;
  if (st.draining) return;
  const auto& me = st.table.self().id;
  for (const auto& [holder, list] : st.watch_copies) {
    auto m = st.table.find(holder);
    if (!m || m->draining || st.table.state(holder) != member_state::up) continue;
    for (const auto& w : list) {
      persistence::watch_id id{w.tenant(), w.name()};
      if (!st.local_watches.contains(id) || st.yielding.contains(id)) continue;
      std::vector<std::string> both{me, holder};
      if (core::owner_of(both, id.tenant, placement_key(id.name)) == me) continue;
      st.yielding.insert(id);
      logging::warn("cluster.watch_duplicate", {{"watch", id.name}, {"kept_on", holder}});
      auto req = std::make_shared<actors::watch_stop_request>();
      req->id = id;
      auto done = in_node(self, [self, id] {
        self->state.yielding.erase(id);
        sync_watch_copies(self);
      });
      req->reply = [done](const std::optional<actors::watch_error>&, bool) { done.run(); };
      self->send(st.cfg.watches, actors::stop_atom::value, actors::watch_stop_request_ptr(std::move(req)));
    }
  }
}

}  // namespace

void sync_watch_copies(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.watches) return;
  auto req = std::make_shared<actors::watch_specs_request>();
  caf::actor me = caf::actor_cast<caf::actor>(self);
  req->reply = [me, id = st.table.self().id](const std::vector<persistence::watch_spec>& specs) {
    proto::WatchCopies copies;
    copies.set_holder(id);
    for (const auto& spec : specs) *copies.add_watches() = to_proto(spec);
    caf::anon_send(me, copies_atom::value, copies.SerializeAsString());
  };
  self->send(st.cfg.watches, actors::specs_atom::value, actors::watch_specs_request_ptr(std::move(req)));
}

void on_own_copies(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::WatchCopies copies;
  if (!parse(bytes, &copies)) return;
  st.local_watches.clear();
  for (const auto& w : copies.watches()) st.local_watches.insert({w.tenant(), w.name()});
  // Every up peer has the latest copy: new ones (or restarted ones, a new
  // handle) get it even when nothing changed here.
  std::set<caf::actor_addr> peers;
  for (const auto& [id, handle] : st.handles)
    if (st.table.state(id) == member_state::up) peers.insert(handle.address());
  if (bytes != st.copies_sent || peers != st.copies_peers) {
    for (const auto& [id, handle] : st.handles)
      if (st.table.state(id) == member_state::up) self->send(handle, wcopy_atom::value, bytes);
    st.copies_sent = bytes;
    st.copies_peers = std::move(peers);
  }
  resolve_duplicates(self);
}

void on_peer_copies(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::WatchCopies copies;
  if (!parse(bytes, &copies) || copies.holder().empty() || copies.holder() == st.table.self().id) return;
  auto& list = st.watch_copies[copies.holder()];
  list.assign(copies.watches().begin(), copies.watches().end());
  resolve_duplicates(self);
}

void adopt_watches_of(self_ptr self, const std::string& lost) {
  auto& st = self->state;
  auto it = st.watch_copies.find(lost);
  if (it == st.watch_copies.end()) return;
  auto list = std::move(it->second);
  st.watch_copies.erase(it);
  if (st.draining || !st.cfg.watches) return;
  for (const auto& w : list) {
    if (st.local_watches.contains({w.tenant(), w.name()})) continue;
    if (!st.cfg.view->owner_of(w.tenant(), placement_key(w.name())).empty()) continue;
    // Its position was in the lost member's store: a fresh baseline.
    logging::warn("cluster.watch_failover", {{"watch", w.name()}, {"from", lost}});
    start_adopted(self, w, "its node was lost");
  }
}

void move_out(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  struct countdown {
    std::size_t left = 1;
    std::function<void()> then;
    void done() {
      if (--left == 0) then();
    }
  };
  auto g = std::make_shared<countdown>();
  g->then = std::move(then);
  // Leases held here for other members' sessions end with the sources; the
  // members subscribe again where the streams move.
  st.leases.clear();
  if (st.cfg.sources) {
    ++g->left;
    self->send(st.cfg.sources, actors::source_handoff_atom::value, in_node(self, [g] { g->done(); }));
  }
  if (!st.cfg.watches) return g->done();
  ++g->left;
  auto req = std::make_shared<actors::watch_specs_request>();
  auto listed = std::make_shared<std::vector<persistence::watch_spec>>();
  auto next = in_node(self, [self, g, listed] {
    auto& st = self->state;
    for (const auto& spec : *listed) {
      auto owner = st.cfg.view->owner_of(spec.id.tenant, placement_key(spec.id.name));
      auto target = st.handles.find(owner);
      if (owner.empty() || target == st.handles.end()) {
        logging::warn("cluster.watch_not_moved", {{"watch", spec.id.name}, {"why", "no member to take it"}});
        continue;
      }
      ++g->left;
      auto release = std::make_shared<actors::watch_release_request>();
      release->id = spec.id;
      auto handle = target->second;
      auto moved = std::make_shared<proto::WatchStart>();
      auto sent = in_node(self, [self, g, handle, owner, moved] {
        if (!moved->name().empty()) {
          self->request(handle, adopt_timeout, wstart_here_atom::value, moved->SerializeAsString())
              .then(
                  [name = moved->name(), owner](const std::string& bytes) {
                    proto::WatchStartReply r;
                    if (parse(bytes, &r) && r.ok())
                      return logging::info("cluster.watch_moved", {{"watch", name}, {"to", owner}});
                    logging::error("cluster.watch_move_failed",
                                   {{"watch", name}, {"to", owner}, {"error", r.error()}});
                  },
                  [self, name = moved->name(), owner](caf::error& err) {
                    logging::error("cluster.watch_move_failed",
                                   {{"watch", name}, {"to", owner}, {"error", self->system().render(err)}});
                  });
        }
        sync_watch_copies(self);  // the others' copies lose it
        g->done();
      });
      release->reply = [moved, sent](const std::optional<actors::watch_error>& error,
                                     const std::optional<persistence::watch_spec>& spec,
                                     const std::optional<persistence::watch_progress>& progress) {
        if (!error && spec) {
          *moved = to_proto(*spec);
          moved->set_adopt(true);
          if (progress) *moved->mutable_progress() = to_proto(*progress);
        }
        sent.run();
      };
      self->send(st.cfg.watches, actors::release_atom::value,
                 actors::watch_release_request_ptr(std::move(release)));
    }
    g->done();
  });
  req->reply = [listed, next](std::vector<persistence::watch_spec> specs) {
    *listed = std::move(specs);
    next.run();
  };
  self->send(st.cfg.watches, actors::specs_atom::value, actors::watch_specs_request_ptr(std::move(req)));
  g->done();
}

}  // namespace tidings::cluster
