#include "cluster/registrar.hpp"

#include <algorithm>

#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = registrar_actor::stateful_pointer<registrar_state>;
using step = registrar_state::step;

constexpr auto min_pause = std::chrono::milliseconds(100);
constexpr auto max_pause = std::chrono::milliseconds(2000);

std::string members_prefix(const registrar_state& st) {
  return st.cfg.prefix + "members/";
}

std::chrono::milliseconds renew_every(const registrar_state& st) {
  auto ttl = std::chrono::milliseconds(std::max<std::int64_t>(st.ttl, 1) * 1000);
  return std::max(std::chrono::milliseconds(100), ttl / 3);
}

// A failed step is tried again after a growing pause.
void retry_later(self_ptr self, const std::string& what, const std::string& error) {
  auto& st = self->state;
  st.pause = std::clamp(st.pause * 2, min_pause, max_pause);
  logging::warn("cluster.membership_retry", {{"step", what}, {"error", error}});
  self->delayed_send(self, st.pause, retry_atom::value, st.attempt);
}

void grant(self_ptr self) {
  auto& st = self->state;
  st.at = step::granting;
  st.lease = 0;
  st.renewing = false;
  st.renewal_sent = self->clock().now();
  auto me = caf::actor_cast<caf::actor>(self);
  st.cfg.plane->grant(st.cfg.lease_seconds,
                      [me, attempt = st.attempt](std::string error, std::int64_t lease, std::int64_t ttl) {
                        caf::anon_send(me, granted_atom::value, attempt, std::move(error), lease, ttl);
                      });
}

void put_self(self_ptr self) {
  auto& st = self->state;
  auto me = caf::actor_cast<caf::actor>(self);
  st.cfg.plane->put(member_key(st.cfg.prefix, st.cfg.self.id),
                    st.cfg.secret->seal(to_proto(st.cfg.self).SerializeAsString(), st.cfg.security), st.lease,
                    [me, attempt = st.attempt](std::string error) {
                      caf::anon_send(me, put_done_atom::value, attempt, std::move(error));
                    });
}

void list(self_ptr self) {
  auto& st = self->state;
  st.at = step::listing;
  auto me = caf::actor_cast<caf::actor>(self);
  st.cfg.plane->list(
      members_prefix(st),
      [me, attempt = st.attempt](std::string error, std::vector<plane_kv> kvs, std::int64_t revision) {
        caf::anon_send(me, listed_atom::value, attempt, std::move(error),
                       std::make_shared<const std::vector<plane_kv>>(std::move(kvs)), revision);
      });
}

void watch(self_ptr self) {
  auto& st = self->state;
  st.at = step::watching;
  auto me = caf::actor_cast<caf::actor>(self);
  auto id = ++st.watch;
  st.cfg.plane->watch(
      members_prefix(st), st.revision,
      [me, id](std::vector<plane_change> changes, std::int64_t revision) {
        caf::anon_send(me, changed_atom::value, id,
                       std::make_shared<const std::vector<plane_change>>(std::move(changes)), revision);
      },
      [me, id](std::string error) { caf::anon_send(me, unwatched_atom::value, id, std::move(error)); });
}

// A new registration: a new lease, and this node is told nothing more until
// the record lists it again.
void start_over(self_ptr self) {
  auto& st = self->state;
  ++st.attempt;
  ++st.watch;  // changes of the old watch no longer count
  st.members.clear();
  st.refused.clear();
  st.listed_self = false;
  grant(self);
}

void lapse(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (st.at == step::leaving) return;
  // A new life: appends meant for the old one are refused (ADR 0022).
  ++st.cfg.self.incarnation;
  logging::warn("cluster.membership_lapsed",
                {{"node", st.cfg.self.id}, {"reason", why}, {"incarnation", st.cfg.self.incarnation}});
  caf::anon_send(st.cfg.listener, lapsed_atom::value, st.cfg.self.incarnation);
  start_over(self);
}

// The listener hears the list while this node is on it.
void report(self_ptr self) {
  auto& st = self->state;
  auto list = std::make_shared<agreed_members>();
  list->revision = st.revision;
  bool self_listed = false;
  for (const auto& [key, m] : st.members) {
    list->members.push_back(m);
    if (m.id == st.cfg.self.id) self_listed = true;
  }
  if (!self_listed) return lapse(self, "the record no longer lists this node");
  st.listed_self = true;
  bool outvoted = st.refused.size() >= list->members.size();
  if (outvoted && !st.outvoted) {
    // Stepping aside ends this life as a lapse does (the others stop
    // counting on it, and a copy it holds may fall behind): the node hears
    // of its new incarnation first, and the record says it.
    ++st.cfg.self.incarnation;
    logging::error("cluster.outvoted",
                   {{"node", st.cfg.self.id},
                    {"accepted", static_cast<std::uint64_t>(list->members.size())},
                    {"refused", static_cast<std::uint64_t>(st.refused.size())},
                    {"incarnation", st.cfg.self.incarnation},
                    {"meaning",
                     "at least as many listed members hold another cluster secret or security configuration "
                     "as this node's: it takes no part (owns no stream) until the records agree"}});
    caf::anon_send(st.cfg.listener, lapsed_atom::value, st.cfg.self.incarnation);
    put_self(self);
  } else if (!outvoted && st.outvoted) {
    logging::info("cluster.outvoted_no_more", {{"node", st.cfg.self.id}});
  }
  st.outvoted = outvoted;
  if (outvoted) list->members.clear();
  caf::anon_send(st.cfg.listener, agreed_atom::value, agreed_members_ptr(list));
}

void refuse(registrar_state& st, const std::string& key, const std::string& node, const std::string& why) {
  st.members.erase(key);
  auto [it, added] = st.refused.try_emplace(key, why);
  if (!added && it->second == why) return;  // said already
  it->second = why;
  logging::warn("cluster.member_refused", {{"key", key}, {"node", node}, {"reason", why}});
}

void apply(registrar_state& st, const std::string& key, const std::string& value) {
  std::string why;
  auto opened = st.cfg.secret->open(value, &why);
  if (!opened) return refuse(st, key, "", why);
  proto::Member p;
  if (!parse(opened->member, &p) || p.id().empty()) return refuse(st, key, "", "not a member record");
  // Sealed, but copied under another key: it would count twice, or keep a
  // member listed after its own key expired.
  if (key != member_key(st.cfg.prefix, p.id()))
    return refuse(st, key, p.id(), "member " + p.id() + "'s record under another member's key");
  if (opened->security != st.cfg.security)
    return refuse(st, key, p.id(),
                  "its security configuration (tenants, keys and cluster TLS) differs from this node's: "
                  "fingerprint " +
                      short_hex(opened->security) + ", here " + short_hex(st.cfg.security));
  if (st.cfg.tls)
    if (auto err = st.cfg.tls->check_peer(p.certificate()); !err.empty()) return refuse(st, key, p.id(), err);
  st.refused.erase(key);
  st.members[key] = from_proto(p);
}

// How long an answered renewal sent at t vouches for the lease. etcd
// counts the TTL from no earlier than t, but this node's clock may run slow
// against etcd's and a timer may fire late: it gives up a tenth early
// (ADR 0021's margin), so it stops before etcd can let another lead.
caf::actor_clock::duration_type trusted_for(const registrar_state& st) {
  return std::chrono::milliseconds(st.ttl * 900);
}

bool holds_lease(const registrar_state& st) {
  return st.at != step::granting && st.at != step::leaving && st.ttl > 0;
}

// The lease may be gone by now if it was not renewed in time.
bool past_deadline(self_ptr self) {
  auto& st = self->state;
  if (!holds_lease(st)) return false;
  return self->clock().now() - st.renewed_at >= trusted_for(st);
}

void on_tick(self_ptr self) {
  auto& st = self->state;
  if (st.at == step::leaving) return;
  if (past_deadline(self)) {
    lapse(self, "the lease was not renewed within nine tenths of its " + std::to_string(st.ttl) + " s TTL");
  } else if (st.at != step::granting && !st.renewing) {
    st.renewing = true;
    st.renewal_sent = self->clock().now();
    auto me = caf::actor_cast<caf::actor>(self);
    st.cfg.plane->keep_alive(st.lease, [me, attempt = st.attempt](std::string error, std::int64_t ttl) {
      caf::anon_send(me, renewed_atom::value, attempt, std::move(error), ttl);
    });
  }
  // The next renewal, or the deadline if that comes first: a lapse is
  // noticed when it happens, not up to a third of the TTL later.
  caf::actor_clock::duration_type next = renew_every(st);
  if (holds_lease(st)) {
    auto left = st.renewed_at + trusted_for(st) - self->clock().now();
    if (left > caf::actor_clock::duration_type::zero()) next = std::min(next, left);
  }
  self->delayed_send(self, next, tick_atom::value);
}

void on_granted(self_ptr self, std::uint64_t attempt, const std::string& error, std::int64_t lease,
                std::int64_t ttl) {
  auto& st = self->state;
  if (attempt != st.attempt || st.at != step::granting) return;
  if (!error.empty() || ttl <= 0) return retry_later(self, "grant", error.empty() ? "no TTL granted" : error);
  st.lease = lease;
  st.ttl = ttl;
  st.renewed_at = st.renewal_sent;
  st.at = step::putting;
  put_self(self);
}

void on_put(self_ptr self, std::uint64_t attempt, const std::string& error) {
  auto& st = self->state;
  if (attempt != st.attempt || st.at == step::leaving) return;
  if (!error.empty()) return retry_later(self, "register", error);
  st.pause = std::chrono::milliseconds(0);
  if (st.at == step::putting) {
    logging::info("cluster.registered", {{"node", st.cfg.self.id}, {"lease_ttl_s", st.ttl}});
    list(self);
  }
}

void on_renewed(self_ptr self, std::uint64_t attempt, const std::string& error, std::int64_t ttl) {
  auto& st = self->state;
  if (attempt != st.attempt) return;
  st.renewing = false;
  if (st.at == step::granting || st.at == step::leaving) return;
  if (!error.empty()) {
    // The deadline decides; a renewal that fails now may work next tick.
    logging::debug("cluster.renew_failed", {{"error", error}});
    return;
  }
  if (ttl <= 0) return lapse(self, "the record says the lease is gone");
  st.renewed_at = st.renewal_sent;
}

void on_listed(self_ptr self, std::uint64_t attempt, const std::string& error, const plane_kvs_ptr& kvs,
               std::int64_t revision) {
  auto& st = self->state;
  if (attempt != st.attempt || st.at != step::listing) return;
  if (!error.empty()) return retry_later(self, "list", error);
  if (past_deadline(self)) return lapse(self, "the lease may have expired while listing");
  st.members.clear();
  st.refused.clear();  // (a record still refused is logged again: this is a new listing)
  for (const auto& kv : *kvs) apply(st, kv.key, kv.value);
  st.revision = revision;
  report(self);
  if (st.listed_self) watch(self);
}

void on_changed(self_ptr self, std::uint64_t id, const plane_changes_ptr& changes, std::int64_t revision) {
  auto& st = self->state;
  if (id != st.watch || st.at != step::watching) return;
  // Late news from a node paused past its deadline: it was gone first.
  if (past_deadline(self)) return lapse(self, "the lease was not renewed within its TTL");
  const auto own = member_key(st.cfg.prefix, st.cfg.self.id);
  for (const auto& c : *changes) {
    if (c.deleted) {
      // Its own key deleted: the lease expired (or was revoked); what the
      // record says after that is news to a non-member.
      if (c.key == own) return lapse(self, "the record deleted this node's key (its lease expired)");
      st.members.erase(c.key);
      st.refused.erase(c.key);
    } else {
      apply(st, c.key, c.value);
    }
  }
  st.revision = std::max(st.revision, revision);
  report(self);
}

void on_unwatched(self_ptr self, std::uint64_t id, const std::string& error) {
  auto& st = self->state;
  if (id != st.watch || st.at != step::watching) return;
  logging::debug("cluster.members_watch_ended", {{"error", error}});
  list(self);  // a fresh list, then a watch from its revision
}

void on_retry(self_ptr self, std::uint64_t attempt) {
  auto& st = self->state;
  if (attempt != st.attempt) return;
  switch (st.at) {
    case step::granting:
      return grant(self);
    case step::putting:
      return put_self(self);
    case step::listing:
      return list(self);
    case step::watching:
    case step::leaving:
      return;
  }
}

}  // namespace

std::string member_key(const std::string& prefix, const std::string& id) {
  return prefix + "members/" + id;
}

registrar_actor::behavior_type registrar(registrar_actor::stateful_pointer<registrar_state> self,
                                         registrar_config cfg) {
  self->state.cfg = std::move(cfg);
  start_over(self);
  self->delayed_send(self, std::chrono::milliseconds(100), tick_atom::value);
  return {
      [self](drain_atom) {
        auto& st = self->state;
        st.cfg.self.draining = true;
        if (st.at == step::watching || st.at == step::listing) put_self(self);
      },
      [self](leave_atom) -> caf::result<bool> {
        auto& st = self->state;
        st.at = step::leaving;
        ++st.watch;
        if (st.lease == 0) return true;
        auto rp = self->make_response_promise<bool>();
        st.cfg.plane->revoke(st.lease, [rp](const std::string&) mutable { rp.deliver(true); });
        return rp;
      },
      [self](tick_atom) { on_tick(self); },
      [self](retry_atom, std::uint64_t attempt) { on_retry(self, attempt); },
      [self](granted_atom, std::uint64_t attempt, const std::string& error, std::int64_t lease,
             std::int64_t ttl) { on_granted(self, attempt, error, lease, ttl); },
      [self](put_done_atom, std::uint64_t attempt, const std::string& error) {
        on_put(self, attempt, error);
      },
      [self](renewed_atom, std::uint64_t attempt, const std::string& error, std::int64_t ttl) {
        on_renewed(self, attempt, error, ttl);
      },
      [self](listed_atom, std::uint64_t attempt, const std::string& error, const plane_kvs_ptr& kvs,
             std::int64_t revision) { on_listed(self, attempt, error, kvs, revision); },
      [self](changed_atom, std::uint64_t id, const plane_changes_ptr& changes, std::int64_t revision) {
        on_changed(self, id, changes, revision);
      },
      [self](unwatched_atom, std::uint64_t id, const std::string& error) { on_unwatched(self, id, error); },
  };
}

}  // namespace tidings::cluster
