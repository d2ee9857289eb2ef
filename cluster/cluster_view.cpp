#include "cluster/cluster_view.hpp"

#include <algorithm>

#include "cluster/ask.hpp"
#include "cluster/atoms.hpp"
#include "cluster/log_shipper.hpp"
#include "cluster/relay_actor.hpp"
#include "cluster/wire.hpp"
#include "core/placement.hpp"
#include "core/stream_name.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {

cluster_view::cluster_view(caf::actor_system& system, std::string self_id, actors::hub_registry& hubs,
                           std::size_t ring_events)
    : system_(system), hubs_(hubs), ring_events_(ring_events) {
  // Not a member until the record lists this node (ADR 0022): nothing is
  // placed here before that.
  auto m = std::make_shared<membership>();
  m->self_id = std::move(self_id);
  current_ = std::move(m);
}

void cluster_view::set_node(caf::actor node) {
  std::lock_guard lock(mutex_);
  node_ = std::move(node);
}

void cluster_view::pull(const actors::stream_key& key, actors::hub_handoff_actor hub) {
  caf::actor node;
  {
    std::lock_guard lock(mutex_);
    node = node_;
  }
  if (!node) return caf::anon_send(hub, actors::adopt_atom::value, actors::stream_handoff_ptr{});
  caf::anon_send(node, pull_atom::value, key.tenant, key.name, hub);
}

bool cluster_view::subscribe_elsewhere(const std::string& tenant, const std::string& stream,
                                       const actors::source_subscribe_request_ptr& req) {
  auto owner = owner_of(tenant, stream);
  if (owner.empty()) return false;
  auto m = current();
  auto target = m->node_of(owner);
  auto fail = [req, owner](actors::watch_error_kind kind, std::string why) {
    actors::source_subscribe_reply r;
    r.error = actors::watch_error{kind, std::move(why)};
    req->reply(std::move(r));
  };
  if (!target) {
    fail(actors::watch_error_kind::unavailable, "the source's node (" + owner + ") is not connected; retry");
    return true;
  }
  proto::SourceSubRequest p;
  p.set_tenant(tenant);
  p.set_uri(req->uri);
  p.set_requester(m->self_id);
  // The owner's first read of the upstream may take a while (its own
  // timeouts are 10 s).
  ask(system_, target, std::chrono::seconds(15), caf::make_message(srcsub_atom::value, p.SerializeAsString()),
      [target, owner, req, fail, tenant, holds = holds_](std::optional<std::string> reply) {
        proto::SourceSubReply r;
        if (!reply)
          return fail(actors::watch_error_kind::unavailable,
                      "the source's node (" + owner + ") did not answer; retry");
        if (!r.ParseFromString(*reply))
          return fail(actors::watch_error_kind::unavailable, "unreadable answer from the source's node");
        if (!r.ok()) return fail(static_cast<actors::watch_error_kind>(r.error_kind()), r.error());
        actors::source_subscribe_reply out;
        out.stream = r.stream();
        out.key = r.key();
        out.shape = r.shape();
        auto hold = std::make_shared<source_hold>();
        hold->tenant = tenant;
        hold->uri = req->uri;
        hold->stream = r.stream();
        hold->holder = owner;
        hold->target = target;
        hold->lease = r.lease();
        // The lease keeps the hold; the hold's end releases the lease there.
        out.lease = std::make_shared<actors::source_lease>(r.lease(), [hold](std::uint64_t) {});
        holds->add(hold);
        req->reply(std::move(out));
      });
  return true;
}

std::optional<actors::stream_tail> cluster_view::read_tail(const actors::stream_key& key, std::size_t max,
                                                           std::chrono::milliseconds timeout) {
  auto m = current();
  auto owner = owner_of(key.tenant, key.name);
  auto target = m->node_of(owner);
  if (!target) return std::nullopt;
  proto::ReadRequest req;
  req.set_tenant(key.tenant);
  req.set_stream(key.name);
  req.set_max_events(static_cast<std::uint32_t>(std::min<std::size_t>(max, 10000)));
  req.set_tail(true);
  std::optional<actors::stream_tail> out;
  caf::scoped_actor self{system_};
  self->request(target, timeout, read_atom::value, req.SerializeAsString())
      .receive(
          [&](const std::string& bytes) {
            proto::TakeReply r;
            if (!r.ParseFromString(bytes)) return;
            auto chunk = from_proto(std::move(r), key);
            if (chunk.status == log_chunk::kind::retry) return;
            out.emplace();
            if (chunk.status != log_chunk::kind::log) return;
            out->meta = std::move(chunk.meta);
            out->events = std::move(chunk.events);
          },
          [](caf::error&) {});
  return out;
}

bool cluster_view::set_pins(const std::string& holder, std::set<actors::stream_key> keys) {
  std::lock_guard lock(mutex_);
  auto& old = pins_[holder];
  if (old == keys) return false;
  std::set<actors::stream_key> touched = old;
  touched.insert(keys.begin(), keys.end());
  for (const auto& k : old)
    if (!keys.contains(k)) last_pinned_by_[k] = {holder, std::chrono::steady_clock::now()};
  old = std::move(keys);
  // Two members may pin one stream for a moment (a duplicate being
  // settled): each key goes to the first member, by id, that pins it.
  for (const auto& k : touched) {
    pinned_by_.erase(k);
    for (const auto& [id, pinned] : pins_)
      if (pinned.contains(k)) {
        pinned_by_[k] = id;
        break;
      }
  }
  return true;
}

std::string cluster_view::previous_holder(const std::string& tenant, const std::string& key) const {
  auto m = current();
  {
    // Where a source or watch writes it, or wrote it until moments ago (a
    // move), if that member is still here; later the placement's holder.
    auto here = [&m](const std::string& id) {
      return id != m->self_id && std::binary_search(m->holders.begin(), m->holders.end(), id);
    };
    std::lock_guard lock(mutex_);
    if (auto it = pinned_by_.find({tenant, key}); it != pinned_by_.end() && here(it->second))
      return it->second;
    if (auto it = last_pinned_by_.find({tenant, key});
        it != last_pinned_by_.end() && here(it->second.holder) &&
        std::chrono::steady_clock::now() - it->second.at < std::chrono::seconds(30))
      return it->second.holder;
  }
  std::vector<std::string> others;
  for (auto& id : m->holders)
    if (id != m->self_id) others.push_back(id);
  return core::owner_of(others, tenant, key);
}

membership_ptr cluster_view::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

void cluster_view::update(membership_ptr m) {
  std::vector<caf::actor_addr> shippers;
  {
    std::lock_guard lock(mutex_);
    current_ = std::move(m);
    std::erase_if(shippers_, [](const caf::actor_addr& a) { return !caf::actor_cast<caf::actor>(a); });
    shippers = shippers_;
  }
  // Followers follow the membership (outside the lock: a send may run the
  // receiver's code on this thread).
  for (auto& a : shippers)
    if (auto s = caf::actor_cast<shipper_actor>(a)) caf::anon_send(s, view_atom::value);
}

void cluster_view::set_replication_settings(replication_settings s) {
  std::lock_guard lock(mutex_);
  replication_ = s;
}

void cluster_view::set_records(record_keeper_actor records) {
  std::lock_guard lock(mutex_);
  records_ = std::move(records);
}

std::optional<record_keeper_actor> cluster_view::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

bool cluster_view::has_record(const actors::stream_key& key) const {
  std::lock_guard lock(mutex_);
  return records_ && replication_.factor >= 2 && core::readable_stream_name(key.name);
}

replication_settings cluster_view::replication() const {
  std::lock_guard lock(mutex_);
  return replication_;
}

std::optional<actors::replicator_actor> cluster_view::spawn_replicator(const actors::stream_key& key,
                                                                       actors::replication_sink_actor hub) {
  auto settings = replication();
  if (settings.factor < 2 || !store_) return std::nullopt;
  shipper_config cfg;
  cfg.stream = key;
  cfg.hub = std::move(hub);
  cfg.store = store_;
  cfg.view = this;
  cfg.replication_factor = settings.factor;
  cfg.write_quorum = settings.write_quorum;
  cfg.min_insync = settings.min_insync;
  cfg.replica_lag = settings.replica_lag;
  cfg.records = records();
  auto shipper = system_.spawn(log_shipper, std::move(cfg));
  {
    std::lock_guard lock(mutex_);
    shippers_.push_back(shipper.address());
  }
  return caf::actor_cast<actors::replicator_actor>(shipper);
}

void cluster_view::fenced(const actors::stream_key& key, const std::string& member) {
  std::lock_guard lock(mutex_);
  fence_hints_[key] = member;
}

std::string cluster_view::take_fence_hint(const actors::stream_key& key) {
  std::lock_guard lock(mutex_);
  auto it = fence_hints_.find(key);
  if (it == fence_hints_.end()) return {};
  auto member = std::move(it->second);
  fence_hints_.erase(it);
  return member;
}

void cluster_view::set_replication(const actors::stream_key& key, replication_info info) {
  std::lock_guard lock(mutex_);
  replication_rows_[key] = std::move(info);
}

void cluster_view::erase_replication(const actors::stream_key& key, const caf::actor_addr& by) {
  std::lock_guard lock(mutex_);
  if (auto it = replication_rows_.find(key); it != replication_rows_.end() && it->second.by == by)
    replication_rows_.erase(it);
}

std::map<actors::stream_key, replication_info> cluster_view::replication_rows() const {
  std::lock_guard lock(mutex_);
  return replication_rows_;
}

std::string cluster_view::owner_of(const std::string& tenant, const std::string& key) const {
  auto m = current();
  {
    // A draining member's pins count too: its watches and sources write
    // their streams until they have moved (their pending notices go out on
    // the way), and a member that took such a stream over by placement
    // would refuse those writes.
    std::lock_guard lock(mutex_);
    if (auto it = pinned_by_.find({tenant, key});
        it != pinned_by_.end() && std::binary_search(m->holders.begin(), m->holders.end(), it->second))
      return it->second == m->self_id ? std::string{} : it->second;
  }
  auto id = core::owner_of(m->live, tenant, key);
  // No member known (this node not listed yet, or lapsed alone): nobody
  // this node could serve it from, least of all itself.
  if (id.empty()) return std::string(no_member);
  return id == m->self_id ? std::string{} : id;
}

std::string cluster_view::owner(const actors::stream_key& key) {
  return owner_of(key.tenant, key.name);
}

bool cluster_view::taken_over(const actors::stream_key& key) {
  auto m = current();
  if (m->lost.empty()) return false;
  auto all = m->live;
  all.insert(all.end(), m->lost.begin(), m->lost.end());
  auto before = core::owner_of(all, key.tenant, key.name);
  return std::find(m->lost.begin(), m->lost.end(), before) != m->lost.end();
}

actors::stream_actor cluster_view::spawn_relay(const actors::stream_key& key, const std::string& owner) {
  auto m = current();
  relay_config cfg;
  cfg.stream = key;
  cfg.owner_id = owner;
  cfg.self_id = m->self_id;
  cfg.registry = &hubs_;
  cfg.ring_events = ring_events_;
  cfg.owner = m->node_of(owner);
  return system_.spawn(relay, std::move(cfg));
}

}  // namespace tidings::cluster
