// Sources follow their member out (ADR 0016): a hold on a source that runs
// on a member that is lost or draining subscribes again at the member that
// owns the source's stream now. Its sessions keep reading the same stream
// through their relay, which follows the stream's owner by itself.

#include <algorithm>

#include "cluster/ask.hpp"
#include "cluster/atoms.hpp"
#include "cluster/cluster_view.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {

source_hold::~source_hold() {
  if (target) caf::anon_send(target, srcunsub_atom::value, lease);
}

void source_hold_list::add(const std::shared_ptr<source_hold>& hold) {
  std::lock_guard lock(mutex);
  holds.push_back(hold);
}

std::vector<std::shared_ptr<source_hold>> source_hold_list::live() {
  std::lock_guard lock(mutex);
  std::erase_if(holds, [](const std::weak_ptr<source_hold>& weak) { return weak.expired(); });
  std::vector<std::shared_ptr<source_hold>> out;
  for (const auto& weak : holds)
    if (auto hold = weak.lock()) out.push_back(std::move(hold));
  return out;
}

void cluster_view::set_sources(actors::source_registry_actor sources) {
  std::lock_guard lock(mutex_);
  sources_ = std::move(sources);
}

std::size_t cluster_view::source_holds() const {
  return holds_->live().size();
}

bool cluster_view::set_returned(const std::string& holder, std::set<actors::stream_key> keys) {
  std::lock_guard lock(mutex_);
  auto& old = returned_[holder];
  if (old == keys) return false;
  old = std::move(keys);
  return true;
}

actors::source_lease_ptr cluster_view::hold_here(const std::string& tenant, const std::string& uri,
                                                 const std::string& stream, actors::source_lease_ptr lease) {
  auto hold = std::make_shared<source_hold>();
  hold->tenant = tenant;
  hold->uri = uri;
  hold->stream = stream;
  auto id = lease->id();
  hold->local = std::move(lease);
  holds_->add(hold);
  // The lease keeps the hold; the hold's end releases whichever lease it
  // has then.
  return std::make_shared<actors::source_lease>(id, [hold](std::uint64_t) {});
}

void cluster_view::follow_sources(bool membership_changed) {
  auto m = current();
  for (auto& hold : holds_->live()) {
    std::string holder;
    bool retry = false;
    actors::stream_key key{hold->tenant, hold->stream};
    {
      std::lock_guard lock(hold->mutex);
      if (membership_changed && hold->gave_up) {
        hold->gave_up = false;
        hold->backoff = {};
        hold->next_try = {};
      }
      if (hold->moving || hold->gave_up) continue;
      holder = hold->holder;
    }
    bool gone = !holder.empty() && std::find(m->live.begin(), m->live.end(), holder) == m->live.end();
    bool listed = false;
    {
      std::lock_guard lock(mutex_);
      auto r = returned_.find(holder);
      listed = r != returned_.end() && r->second.contains(key);
    }
    bool returned = false;
    {
      std::lock_guard lock(hold->mutex);
      if (listed && hold->holder == holder) hold->returned = true;
      returned = hold->returned;
    }
    if (!gone && !returned) continue;
    // Running here again (a new start since the return).
    if (holder.empty() && hubs_.pinned(key)) continue;
    // Where the stream is owned now, the holder again included (the owner
    // it was returned to may have left): one that has not heard of the
    // unpin yet refuses with "retry", and the pauses below apply.
    auto owner = owner_of(hold->tenant, hold->stream);
    if (owner == no_member) continue;
    {
      std::lock_guard lock(hold->mutex);
      if (hold->moving || hold->holder != holder || std::chrono::steady_clock::now() < hold->next_try)
        continue;
      retry = hold->backoff.count() > 0;
      hold->moving = true;
    }
    if (!retry)
      logging::info("cluster.source_follow", {{"uri", hold->uri},
                                              {"from", holder.empty() ? std::string("this node") : holder},
                                              {"reason", gone ? "member gone" : "returned to its owner"}});
    resubscribe(hold, owner);
  }
}

namespace {

// The hold runs at `holder` now (with `lease` there, or `local` here); the
// lease at the member it left is released.
void moved_to(const std::shared_ptr<source_hold>& hold, const std::string& holder, caf::actor target,
              std::uint64_t lease, actors::source_lease_ptr local) {
  caf::actor old_target;
  std::uint64_t old_lease = 0;
  {
    std::lock_guard lock(hold->mutex);
    old_target = std::exchange(hold->target, std::move(target));
    old_lease = std::exchange(hold->lease, lease);
    hold->holder = holder;
    hold->local = std::move(local);
    hold->moving = false;
    hold->returned = false;
    hold->backoff = {};
  }
  if (old_target) caf::anon_send(old_target, srcunsub_atom::value, old_lease);
  logging::info("cluster.source_followed",
                {{"uri", hold->uri}, {"to", holder.empty() ? std::string("this node") : holder}});
}

void not_moved(const std::shared_ptr<source_hold>& hold, const std::string& why, bool permanent = false) {
  constexpr std::chrono::milliseconds first{500};
  constexpr std::chrono::milliseconds most{30000};
  std::chrono::milliseconds pause{};
  {
    std::lock_guard lock(hold->mutex);
    hold->moving = false;
    hold->gave_up = permanent;
    hold->backoff = hold->backoff.count() == 0 ? first : std::min(hold->backoff * 2, most);
    hold->next_try = std::chrono::steady_clock::now() + hold->backoff;
    pause = hold->backoff;
  }
  if (permanent)
    return logging::error("cluster.source_follow_failed",
                          {{"uri", hold->uri}, {"error", why}, {"final", true}});
  logging::warn(
      "cluster.source_follow_failed",
      {{"uri", hold->uri}, {"error", why}, {"retry_in_ms", static_cast<std::int64_t>(pause.count())}});
}

}  // namespace

void cluster_view::resubscribe(const std::shared_ptr<source_hold>& hold, const std::string& owner) {
  if (owner.empty()) {
    actors::source_registry_actor sources;
    {
      std::lock_guard lock(mutex_);
      sources = sources_;
    }
    if (!sources) return not_moved(hold, "this node runs no sources");
    auto req = std::make_shared<actors::source_subscribe_request>();
    req->tenant = hold->tenant;
    req->uri = hold->uri;
    req->here = true;
    req->reply = [hold](actors::source_subscribe_reply r) {
      if (r.error)
        return not_moved(hold, r.error->message, r.error->kind == actors::watch_error_kind::bad_request);
      moved_to(hold, "", {}, 0, std::move(r.lease));
    };
    caf::anon_send(sources, actors::source_sub_atom::value,
                   actors::source_subscribe_request_ptr(std::move(req)));
    return;
  }
  auto m = current();
  auto target = m->node_of(owner);
  if (!target) return not_moved(hold, "the new owner " + owner + " is not connected");
  proto::SourceSubRequest p;
  p.set_tenant(hold->tenant);
  p.set_uri(hold->uri);
  p.set_requester(m->self_id);
  ask(system_, target, std::chrono::seconds(15), caf::make_message(srcsub_atom::value, p.SerializeAsString()),
      [hold, owner, target](std::optional<std::string> reply) {
        proto::SourceSubReply r;
        if (!reply || !r.ParseFromString(*reply)) return not_moved(hold, owner + " did not answer");
        if (!r.ok())
          return not_moved(hold, r.error(),
                           r.error_kind() == static_cast<int>(actors::watch_error_kind::bad_request));
        moved_to(hold, owner, target, r.lease(), nullptr);
      });
}

}  // namespace tidings::cluster
