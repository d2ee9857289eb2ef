#include "cluster/record_keeper.hpp"

#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

using self_ptr = record_keeper_actor::stateful_pointer<record_keeper_state>;
using job = record_keeper_state::job;
using kind = record_request::kind;

// Another change won the race this many times in a row: give up (the asker
// tries again later with fresher knowledge).
constexpr int max_decisions = 8;
constexpr auto retry_pause = std::chrono::milliseconds(100);

std::string escaped(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out += c;
  }
  return out;
}

// The wire edge: the record's bytes are decoded here, once.
std::optional<core::stream_record> decode(const std::string& bytes, bool* ok) {
  proto::StreamRecord p;
  *ok = p.ParseFromString(bytes);
  if (!*ok) return std::nullopt;
  core::stream_record r;
  r.leader = p.leader();
  r.leader_epoch = p.leader_epoch();
  r.isr.assign(p.isr().begin(), p.isr().end());
  r.log_epoch = p.log_epoch();
  for (const auto& e : p.epochs()) r.epochs.push_back({e.leader_epoch(), e.start()});
  return r;
}

std::string encode(const core::stream_record& r) {
  proto::StreamRecord p;
  p.set_leader(r.leader);
  p.set_leader_epoch(r.leader_epoch);
  for (const auto& m : r.isr) p.add_isr(m);
  p.set_log_epoch(r.log_epoch);
  for (const auto& e : r.epochs) {
    auto* s = p.add_epochs();
    s->set_leader_epoch(e.leader_epoch);
    s->set_start(e.start);
  }
  return p.SerializeAsString();
}

// What an ask makes of the record as read: nothing to write (the answer
// as is), or a record to write by compare-and-swap.
struct decision {
  record_answer answer;
  std::optional<core::stream_record> write;
};

decision refused(const std::optional<core::stream_record>& r, std::string why, bool deposed = false) {
  decision d;
  d.answer.record = r;
  d.answer.reason = std::move(why);
  d.answer.deposed = deposed;
  return d;
}

decision kept(const std::optional<core::stream_record>& r) {
  decision d;
  d.answer.ok = true;
  d.answer.record = r;
  return d;
}

decision from_rule(const std::optional<core::stream_record>& r, core::rule_result res, bool deposed) {
  if (!res.ok) return refused(r, std::move(res.reason), deposed);
  decision d;
  d.answer.ok = true;
  d.write = std::move(res.record);
  return d;
}

// The leader's ISR changes: asked again after a lost answer, or twice, the
// change that is already there is done, not refused.
decision decide_isr(const record_request& a, const std::optional<core::stream_record>& r) {
  if (!r) return refused(r, "the stream has no record", true);
  const bool leads = r->leader == a.me && r->leader_epoch == a.at_epoch;
  if (!leads)
    return refused(
        r, "the record has moved on: " + r->leader + " leads at epoch " + std::to_string(r->leader_epoch),
        true);
  if (a.what == kind::shrink) {
    if (!r->in_isr(a.member)) return kept(r);
    return from_rule(r, core::shrink_isr(*r, a.me, a.at_epoch, a.member), false);
  }
  if (r->in_isr(a.member)) return kept(r);
  return from_rule(r, core::expand_isr(*r, a.me, a.at_epoch, a.member, a.member_end, a.must_hold), false);
}

decision decide(const record_request& a, const std::optional<core::stream_record>& r) {
  switch (a.what) {
    case kind::read:
      return kept(r);
    case kind::claim: {
      auto plan = core::plan_claim(r, a.me, a.has_copy, a.my_end, a.live);
      decision d;
      d.answer.plan = plan.what;
      d.answer.from = plan.from;
      d.answer.record = r;
      d.answer.reason = plan.reason;
      d.answer.ok = true;
      using p = core::claim_plan::kind;
      if ((plan.what == p::create || plan.what == p::elect || plan.what == p::lead) && plan.change.ok)
        d.write = plan.change.record;
      return d;
    }
    case kind::succeed:
      if (!r) return refused(r, "the stream has no record");
      // Pulled under another leadership: what that one acknowledged since
      // may be missing from the pulled log.
      if (r->leader_epoch != a.at_epoch)
        return refused(r, "the record moved on (leader epoch " + std::to_string(r->leader_epoch) +
                              ") since the log was pulled at " + std::to_string(a.at_epoch));
      return from_rule(r, core::succeed(*r, a.me, a.my_end, a.member, a.live), false);
    case kind::shrink:
    case kind::expand:
      return decide_isr(a, r);
    case kind::force:
      if (!r) return refused(r, "the stream has no record");
      return from_rule(r, core::force_elect(*r, a.me, a.my_end, a.live, a.new_log_epoch), false);
  }
  return refused(r, "unknown ask");
}

void answer(self_ptr self, std::uint64_t token, record_answer a) {
  auto it = self->state.jobs.find(token);
  if (it == self->state.jobs.end()) return;
  it->second.reply.deliver(std::make_shared<const record_answer>(std::move(a)));
  self->state.jobs.erase(it);
}

void read(self_ptr self, std::uint64_t token) {
  auto& st = self->state;
  auto& j = st.jobs.at(token);
  record_keeper_actor me = self;
  st.cfg.plane->get(record_key(st.cfg.prefix, j.ask->stream), [me, token](std::string error, plane_record r) {
    caf::anon_send(me, record_got_atom::value, token, std::move(error), r.found, std::move(r.value),
                   r.mod_revision);
  });
}

// A failed call is tried again within the ask's patience, then answered.
void failed(self_ptr self, std::uint64_t token, const std::string& error) {
  auto it = self->state.jobs.find(token);
  if (it == self->state.jobs.end()) return;
  if (self->clock().now() + retry_pause < it->second.deadline)
    return void(self->delayed_send(self, retry_pause, record_retry_atom::value, token));
  record_answer a;
  a.reason = "the cluster's record store did not answer: " + error;
  answer(self, token, std::move(a));
}

// The record holds what this ask wrote.
void written_now(self_ptr self, std::uint64_t token, const std::string& value) {
  const auto& ask = *self->state.jobs.at(token).ask;
  bool ok = false;
  record_answer a;
  a.ok = true;
  a.record = decode(value, &ok);
  if (ask.what == kind::claim) {
    auto plan = core::plan_claim(a.record, ask.me, ask.has_copy, ask.my_end, ask.live);
    a.plan = plan.what;  // lead: the record names this member now
    a.from = plan.from;
  }
  logging::info("cluster.record_changed",
                {{"stream", ask.stream.name},
                 {"leader", a.record ? a.record->leader : std::string{}},
                 {"leader_epoch", a.record ? a.record->leader_epoch : 0},
                 {"isr", static_cast<std::uint64_t>(a.record ? a.record->isr.size() : 0)}});
  answer(self, token, std::move(a));
}

void decide_on(self_ptr self, std::uint64_t token, bool found, const std::string& value,
               std::int64_t revision) {
  auto& st = self->state;
  auto& j = st.jobs.at(token);
  // Our own earlier write whose answer was lost: done.
  if (found && !j.written.empty() && value == j.written) return written_now(self, token, value);
  std::optional<core::stream_record> record;
  if (found) {
    bool ok = false;
    record = decode(value, &ok);
    if (!ok) {
      logging::error("cluster.record_unreadable", {{"stream", j.ask->stream.name}});
      record_answer a;
      a.reason = "the stream's record in the cluster's store is unreadable";
      return answer(self, token, std::move(a));
    }
  }
  if (++j.decisions > max_decisions) {
    record_answer a;
    a.record = record;
    a.reason = "the stream's record kept changing; retry";
    return answer(self, token, std::move(a));
  }
  auto d = decide(*j.ask, record);
  if (!d.write) return answer(self, token, std::move(d.answer));
  j.written = encode(*d.write);
  record_keeper_actor me = self;
  st.cfg.plane->swap(record_key(st.cfg.prefix, j.ask->stream), found ? revision : 0, j.written,
                     [me, token](std::string error, bool swapped, plane_record now) {
                       caf::anon_send(me, record_swapped_atom::value, token, std::move(error), swapped,
                                      now.found, std::move(now.value), now.mod_revision);
                     });
}

void on_swapped(self_ptr self, std::uint64_t token, const std::string& error, bool swapped, bool found,
                const std::string& value, std::int64_t revision) {
  auto& st = self->state;
  auto it = st.jobs.find(token);
  if (it == st.jobs.end()) return;
  if (!error.empty()) return failed(self, token, error);  // read again: it may have been written
  if (!swapped) {
    it->second.written.clear();
    return decide_on(self, token, found, value, revision);
  }
  written_now(self, token, value);
}

}  // namespace

std::string record_key(const std::string& prefix, const actors::stream_key& stream) {
  return prefix + "streams/" + escaped(stream.tenant) + "/" + escaped(stream.name);
}

record_keeper_actor::behavior_type record_keeper(
    record_keeper_actor::stateful_pointer<record_keeper_state> self, record_keeper_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
      [self](record_atom, const record_request_ptr& ask) -> caf::result<record_answer_ptr> {
        auto& st = self->state;
        auto token = st.next_token++;
        auto rp = self->make_response_promise<record_answer_ptr>();
        st.jobs.emplace(token, job{ask, rp, {}, 0, self->clock().now() + st.cfg.patience});
        read(self, token);
        return rp;
      },
      [self](record_got_atom, std::uint64_t token, const std::string& error, bool found,
             const std::string& value, std::int64_t revision) {
        if (!self->state.jobs.contains(token)) return;
        if (!error.empty()) return failed(self, token, error);
        decide_on(self, token, found, value, revision);
      },
      [self](record_swapped_atom, std::uint64_t token, const std::string& error, bool swapped, bool found,
             const std::string& value,
             std::int64_t revision) { on_swapped(self, token, error, swapped, found, value, revision); },
      [self](record_retry_atom, std::uint64_t token) {
        if (self->state.jobs.contains(token)) read(self, token);
      },
  };
}

}  // namespace tidings::cluster
