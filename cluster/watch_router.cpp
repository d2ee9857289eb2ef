#include "cluster/watch_router.hpp"

#include <algorithm>

#include "cluster/wire.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

using self_ptr = watch_router_actor::stateful_pointer<watch_router_state>;

// A watch's baseline read and filter dry run may take up to the manager's
// own 30 s deadline.
constexpr auto start_timeout = std::chrono::seconds(40);
constexpr auto ask_timeout = std::chrono::seconds(2);

// `rp` is answered when the watch manager's reply comes back (done_atom).
std::uint64_t keep(self_ptr self, const caf::typed_response_promise<std::string>& rp) {
  auto token = self->state.next_token++;
  self->state.waiting.emplace(token, rp);
  return token;
}

// Asks every member `ask(target)` and folds each answer (or nullopt for a
// member that did not answer) into `fold`; `done` runs once, after all.
// Every up member's node actor, this node's own included.
router_members members_of(const watch_router_state& st) {
  if (st.members) return *st.members;
  return {{st.cfg.self_id, st.cfg.node}};
}

template <class Ask, class Fold, class Done>
void ask_all(self_ptr self, Ask ask, Fold fold, Done done) {
  struct state {
    std::size_t left;
    Done done;
  };
  auto targets = members_of(self->state);
  auto s = std::make_shared<state>(state{targets.size(), std::move(done)});
  for (auto& member : targets) {
    const auto& id = member.first;
    ask(member.second)
        .then(
            [s, fold, id](const std::string& reply) {
              fold(id, std::optional<std::string>(reply));
              if (--s->left == 0) s->done();
            },
            [s, fold, id](caf::error&) {
              fold(id, std::optional<std::string>());
              if (--s->left == 0) s->done();
            });
  }
}

caf::result<std::string> on_watch_start_here(self_ptr self, const std::string& bytes) {
  proto::WatchStart p;
  proto::WatchStartReply bad;
  bad.set_error_kind(static_cast<int>(actors::watch_error_kind::bad_request));
  bad.set_error("unreadable watch start");
  if (!parse(bytes, &p)) return bad.SerializeAsString();
  if (self->state.draining && !p.adopt()) {
    // Its watches are moving to other members; this one belongs there too.
    proto::WatchStartReply out;
    out.set_error_kind(static_cast<int>(actors::watch_error_kind::unavailable));
    out.set_error("this node is draining; retry");
    return out.SerializeAsString();
  }
  auto rp = self->make_response_promise<std::string>();
  auto token = keep(self, rp);
  auto req = std::make_shared<actors::watch_start_request>();
  req->spec = spec_of(p);
  req->max_watches = p.max_watches();
  req->adopt = p.adopt();
  if (p.has_progress()) req->progress = progress_of(p.progress());
  watch_router_actor me = self;
  // The other members' copies follow at once, not at the next tick.
  auto node = self->state.cfg.node;
  req->reply = [me, token, node](const actors::watch_start_reply& r) {
    proto::WatchStartReply out;
    out.set_ok(!r.error);
    if (r.error) {
      out.set_error_kind(static_cast<int>(r.error->kind));
      out.set_error(r.error->message);
    }
    out.set_shape(r.shape);
    out.set_replaced(r.replaced);
    caf::anon_send(node, watches_changed_atom::value);
    caf::anon_send(me, done_atom::value, token, out.SerializeAsString());
  };
  self->send(self->state.cfg.watches, actors::start_atom::value,
             actors::watch_start_request_ptr(std::move(req)));
  return rp;
}

caf::result<std::string> on_watch_list_here(self_ptr self, const std::string& tenant) {
  auto rp = self->make_response_promise<std::string>();
  auto token = keep(self, rp);
  auto req = std::make_shared<actors::watch_list_request>();
  req->tenant = tenant;
  watch_router_actor me = self;
  req->reply = [me, token, node = self->state.cfg.self_id](const std::vector<actors::watch_info>& list) {
    proto::WatchList out;
    for (auto& w : list) *out.add_watches() = to_proto(w, node);
    caf::anon_send(me, done_atom::value, token, out.SerializeAsString());
  };
  self->send(self->state.cfg.watches, actors::list_atom::value,
             actors::watch_list_request_ptr(std::move(req)));
  return rp;
}

caf::result<std::string> on_watch_stop_here(self_ptr self, const std::string& tenant,
                                            const std::string& name) {
  auto node = self->state.cfg.node;
  auto rp = self->make_response_promise<std::string>();
  auto token = keep(self, rp);
  auto req = std::make_shared<actors::watch_stop_request>();
  req->id = {tenant, name};
  watch_router_actor me = self;
  req->reply = [me, token, node](std::optional<actors::watch_error> error, bool stopped) {
    proto::WatchStopReply out;
    out.set_ok(!error);
    if (error) {
      out.set_error_kind(static_cast<int>(error->kind));
      out.set_error(error->message);
    }
    out.set_stopped(stopped);
    caf::anon_send(node, watches_changed_atom::value);
    caf::anon_send(me, done_atom::value, token, out.SerializeAsString());
  };
  // A stop reaches every member: a lost member's copy of it must not bring
  // it back later. It is forgotten first, so that any start of it from that
  // copy reached the manager before this stop does.
  auto stop = [self, req] {
    self->send(self->state.cfg.watches, actors::stop_atom::value, actors::watch_stop_request_ptr(req));
  };
  self->request(node, ask_timeout, stopping_atom::value, tenant, name)
      .then([stop](bool) { stop(); }, [stop](caf::error&) { stop(); });
  return rp;
}

caf::result<std::string> on_watch_list(self_ptr self, const std::string& tenant) {
  auto rp = self->make_response_promise<std::string>();
  auto merged = std::make_shared<proto::WatchList>();
  ask_all(
      self,
      [self, tenant](const caf::actor& t) {
        return self->request(t, ask_timeout, wlist_here_atom::value, tenant);
      },
      [merged](const std::string&, const std::optional<std::string>& reply) {
        proto::WatchList part;
        if (!reply || !parse(*reply, &part)) return merged->set_partial(true);
        for (auto& w : part.watches()) *merged->add_watches() = w;
      },
      [rp, merged]() mutable { rp.deliver(merged->SerializeAsString()); });
  return rp;
}

caf::result<std::string> on_watch_start(self_ptr self, const std::string& bytes) {
  proto::WatchStart p;
  if (!parse(bytes, &p)) return on_watch_start_here(self, bytes);
  auto rp = self->make_response_promise<std::string>();
  auto holder = std::make_shared<std::string>();
  // Where a watch of this name runs already (a replace goes there), else
  // the owner of its notice stream.
  ask_all(
      self,
      [self, tenant = p.tenant()](const caf::actor& t) {
        return self->request(t, ask_timeout, wlist_here_atom::value, tenant);
      },
      [holder, name = p.name()](const std::string& node, const std::optional<std::string>& reply) {
        proto::WatchList part;
        if (!reply || !parse(*reply, &part)) return;
        for (auto& w : part.watches())
          if (w.name() == name && w.state() != "moving") *holder = node;
      },
      [self, rp, holder, bytes, p]() mutable {
        auto& st = self->state;
        auto target_id = !holder->empty() ? *holder : st.cfg.owner_of(p.tenant(), "watch:" + p.name());
        caf::actor target = st.cfg.node;
        if (!target_id.empty() && target_id != st.cfg.self_id) {
          auto members = members_of(st);
          auto h = std::find_if(members.begin(), members.end(),
                                [&](const auto& m) { return m.first == target_id; });
          if (h == members.end()) {
            proto::WatchStartReply out;
            out.set_error_kind(static_cast<int>(actors::watch_error_kind::unavailable));
            out.set_error("the watch's node (" + target_id + ") is not connected; retry");
            rp.deliver(out.SerializeAsString());
            return;
          }
          target = h->second;
        }
        self->request(target, start_timeout, wstart_here_atom::value, bytes)
            .then([rp](const std::string& reply) mutable { rp.deliver(reply); },
                  [rp, target_id](caf::error&) mutable {
                    proto::WatchStartReply out;
                    out.set_error_kind(static_cast<int>(actors::watch_error_kind::unavailable));
                    out.set_error("the watch's node (" + target_id + ") did not answer; retry");
                    rp.deliver(out.SerializeAsString());
                  });
      });
  return rp;
}

caf::result<std::string> on_watch_stop(self_ptr self, const std::string& tenant, const std::string& name) {
  auto rp = self->make_response_promise<std::string>();
  auto merged = std::make_shared<proto::WatchStopReply>();
  merged->set_ok(true);
  auto missing = std::make_shared<bool>(false);
  ask_all(
      self,
      [self, tenant, name](const caf::actor& t) {
        return self->request(t, ask_timeout, wstop_here_atom::value, tenant, name);
      },
      [merged, missing](const std::string&, const std::optional<std::string>& reply) {
        proto::WatchStopReply part;
        if (!reply || !parse(*reply, &part)) {
          *missing = true;
          return;
        }
        if (part.stopped()) merged->set_stopped(true);
        if (!part.ok()) {
          merged->set_ok(false);
          merged->set_error_kind(part.error_kind());
          merged->set_error(part.error());
        }
      },
      [rp, merged, missing]() mutable {
        // Not found anywhere that answered, and someone did not: say so
        // rather than a plain "not stopped".
        if (!merged->stopped() && merged->ok() && *missing) {
          merged->set_ok(false);
          merged->set_error_kind(static_cast<int>(actors::watch_error_kind::unavailable));
          merged->set_error("a member did not answer; the watch may run there; retry");
        }
        rp.deliver(merged->SerializeAsString());
      });
  return rp;
}

}  // namespace

watch_router_actor::behavior_type watch_router(watch_router_actor::stateful_pointer<watch_router_state> self,
                                               watch_router_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
      [self](wstart_atom, const std::string& bytes) { return on_watch_start(self, bytes); },
      [self](wstart_here_atom, const std::string& bytes) { return on_watch_start_here(self, bytes); },
      [self](wlist_atom, const std::string& tenant) { return on_watch_list(self, tenant); },
      [self](wlist_here_atom, const std::string& tenant) { return on_watch_list_here(self, tenant); },
      [self](wstop_atom, const std::string& tenant, const std::string& name) {
        return on_watch_stop(self, tenant, name);
      },
      [self](wstop_here_atom, const std::string& tenant, const std::string& name) {
        return on_watch_stop_here(self, tenant, name);
      },
      [self](done_atom, std::uint64_t token, const std::string& bytes) {
        auto it = self->state.waiting.find(token);
        if (it == self->state.waiting.end()) return;
        it->second.deliver(bytes);
        self->state.waiting.erase(it);
      },
      [self](members_atom, const router_members_ptr& members) { self->state.members = members; },
      [self](drain_atom) { self->state.draining = true; },
  };
}

}  // namespace tidings::cluster
