#include "core/stream_leadership.hpp"

#include <algorithm>
#include <cstdint>

namespace tidings::core {
namespace {

rule_result refuse(std::string reason) {
  return rule_result{false, {}, std::move(reason)};
}

rule_result accept(stream_record r) {
  std::sort(r.isr.begin(), r.isr.end());
  r.isr.erase(std::unique(r.isr.begin(), r.isr.end()), r.isr.end());
  return rule_result{true, std::move(r), {}};
}

bool contains(const std::vector<member_id>& v, const member_id& m) {
  return std::find(v.begin(), v.end(), m) != v.end();
}

// A change only the leader at its current epoch may make.
const char* leader_check(const stream_record& r, const member_id& by, std::uint64_t at_epoch) {
  if (r.leader != by) return "only the stream's leader changes its in-sync replicas";
  if (r.leader_epoch != at_epoch) return "the leader epoch has moved on";
  return nullptr;
}

// The record led by candidate at a new epoch that begins after its log's
// end, with the ISR's live members.
stream_record led_by(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                     const std::vector<member_id>& live) {
  stream_record next = r;
  next.leader = candidate;
  next.leader_epoch = r.leader_epoch + 1;
  next.isr.clear();
  for (const auto& m : r.isr)
    if (contains(live, m)) next.isr.push_back(m);
  next.epochs.push_back({next.leader_epoch, candidate_end + 1});
  return next;
}

}  // namespace

std::uint64_t elected_end(const stream_record& r) {
  return r.epochs.empty() ? 0 : r.epochs.back().start - 1;
}

bool stream_record::in_isr(const member_id& m) const {
  return contains(isr, m);
}

stream_record first_record(const member_id& leader, const std::vector<member_id>& replicas,
                           std::uint64_t log_epoch) {
  stream_record r;
  r.leader = leader;
  r.leader_epoch = 1;
  r.isr = replicas;
  r.isr.push_back(leader);
  r.log_epoch = log_epoch;
  r.epochs = {{1, 1}};
  return accept(std::move(r)).record;
}

rule_result shrink_isr(const stream_record& r, const member_id& by, std::uint64_t at_epoch,
                       const member_id& member) {
  if (const char* why = leader_check(r, by, at_epoch)) return refuse(why);
  if (member == by) return refuse("the leader cannot leave the in-sync replicas");
  if (!r.in_isr(member)) return refuse(member + " is not an in-sync replica");
  stream_record next = r;
  next.isr.erase(std::find(next.isr.begin(), next.isr.end(), member));
  return accept(std::move(next));
}

rule_result expand_isr(const stream_record& r, const member_id& by, std::uint64_t at_epoch,
                       const member_id& member, std::uint64_t member_end, std::uint64_t leader_end) {
  if (const char* why = leader_check(r, by, at_epoch)) return refuse(why);
  if (r.in_isr(member)) return refuse(member + " is an in-sync replica already");
  if (member_end < leader_end)
    return refuse(member + " holds up to " + std::to_string(member_end) + ", short of the leader's " +
                  std::to_string(leader_end));
  stream_record next = r;
  next.isr.push_back(member);
  return accept(std::move(next));
}

rule_result elect(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                  const std::vector<member_id>& live) {
  if (!contains(live, candidate)) return refuse(candidate + " holds no live lease");
  if (!r.in_isr(candidate))
    return refuse(candidate + " is not an in-sync replica: it may lack acknowledged events");
  if (!r.leader.empty() && r.leader != candidate && contains(live, r.leader))
    return refuse("the leader " + r.leader + " still holds its lease");
  return accept(led_by(r, candidate, candidate_end, live));
}

rule_result succeed(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                    const member_id& from, const std::vector<member_id>& live) {
  if (!contains(live, candidate)) return refuse(candidate + " holds no live lease");
  if (from == candidate) return refuse("a member cannot take its log from itself");
  // The recorded leader itself may take its log back from an ISR member
  // (its own copy was lost): that member holds everything acknowledged.
  const bool leader_gone = r.leader.empty() || !contains(live, r.leader) || r.leader == candidate;
  if (from != r.leader && !(leader_gone && r.in_isr(from)))
    return refuse(from + " is neither the leader nor, with the leader gone, an in-sync replica");
  // The giver stays in the ISR: it keeps its copy until the taker has
  // stored the log (a taker killed before that pulls it again from there),
  // and the taker's shipper shrinks it away unless it follows.
  auto next = led_by(r, candidate, candidate_end, live);
  next.isr.push_back(candidate);
  return accept(std::move(next));
}

claim_plan plan_claim(const std::optional<stream_record>& r, const member_id& me, bool has_copy,
                      std::uint64_t my_end, const std::vector<member_id>& live) {
  using kind = claim_plan::kind;
  claim_plan p;
  if (!r) {
    p.what = kind::create;
    p.change = accept(first_record(me, {}, 0));
    return p;
  }
  // The recorded leader leads on its copy only when that holds the log as
  // it was when it was elected: a copy lost or cut short (its store wiped,
  // or it was killed between taking the record and storing a pulled log)
  // is pulled again from a live ISR member first.
  const std::uint64_t elected = elected_end(*r);
  if (r->leader == me && (has_copy ? my_end >= elected : elected == 0)) {
    // Leading again takes a new leader epoch too: a taker that pulled this
    // log before (its `succeed` names the epoch it pulled at) cannot then
    // take the record over without what this leadership acknowledges.
    p.what = kind::lead;
    p.change = elect(*r, me, my_end, live);
    return p;
  }
  if (r->leader != me && !r->leader.empty() && contains(live, r->leader)) {
    p.what = kind::pull;
    p.from = r->leader;
    return p;
  }
  if (r->leader != me && has_copy && r->in_isr(me)) {
    p.what = kind::elect;
    p.change = elect(*r, me, my_end, live);
    if (p.change.ok) return p;
  }
  for (const auto& m : r->isr)
    if (m != me && contains(live, m)) {
      p.what = kind::pull;
      p.from = m;
      return p;
    }
  p.what = kind::hold;
  std::string isr;
  for (const auto& m : r->isr) isr += (isr.empty() ? "" : ", ") + m;
  p.reason = r->leader == me ? "this node leads the stream but its copy ends before seq " +
                                   std::to_string(elected) + ", and no other in-sync replica (" + isr +
                                   ") holds a live lease; writes wait until one returns"
                             : "no in-sync replica of the stream holds a live lease (in sync: " + isr +
                                   "); writes wait until one returns";
  return p;
}

isr_step next_isr_step(const stream_record& r, const member_id& me, const std::vector<member_id>& in_sync,
                       const std::map<member_id, std::uint64_t>& ends, std::uint64_t must_hold) {
  for (const auto& m : r.isr)
    if (m != me && !contains(in_sync, m)) return {isr_step::kind::shrink, m};
  for (const auto& m : in_sync) {
    if (m == me || r.in_isr(m)) continue;
    auto it = ends.find(m);
    if (it != ends.end() && it->second >= must_hold) return {isr_step::kind::expand, m};
  }
  return {};
}

std::uint64_t acknowledgeable(const stream_record& r, const member_id& me, std::uint64_t my_epoch,
                              const std::map<member_id, std::uint64_t>& durable_ends,
                              std::size_t min_insync) {
  if (r.leader != me || r.leader_epoch != my_epoch || r.isr.size() < min_insync) return 0;
  std::uint64_t bound = UINT64_MAX;
  for (const auto& m : r.isr) {
    auto it = durable_ends.find(m);
    bound = std::min(bound, it == durable_ends.end() ? 0 : it->second);
  }
  return bound == UINT64_MAX ? 0 : bound;
}

rule_result force_elect(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                        const std::vector<member_id>& live, std::uint64_t new_log_epoch) {
  if (!contains(live, candidate)) return refuse(candidate + " holds no live lease");
  for (const auto& m : r.isr)
    if (contains(live, m)) return refuse("the in-sync replica " + m + " is alive: elect it instead");
  if (new_log_epoch == r.log_epoch) return refuse("a forced election starts a new log epoch");
  stream_record next;
  next.leader = candidate;
  next.leader_epoch = r.leader_epoch + 1;
  next.isr = {candidate};
  next.log_epoch = new_log_epoch;
  next.epochs = {{next.leader_epoch, candidate_end + 1}};
  return accept(std::move(next));
}

bool may_acknowledge(const stream_record& r, const member_id& me, std::uint64_t my_epoch, std::uint64_t seq,
                     const std::map<member_id, std::uint64_t>& durable_ends, std::size_t min_insync) {
  if (r.leader != me || r.leader_epoch != my_epoch) return false;
  if (r.isr.size() < min_insync) return false;
  return std::all_of(r.isr.begin(), r.isr.end(), [&](const member_id& m) {
    const auto it = durable_ends.find(m);
    return it != durable_ends.end() && it->second >= seq;
  });
}

std::uint64_t epoch_of(const epoch_starts& epochs, std::uint64_t seq) {
  std::uint64_t epoch = 0;
  for (const auto& e : epochs) {
    if (e.start > seq) break;
    epoch = e.leader_epoch;
  }
  return epoch;
}

std::uint64_t common_prefix(const epoch_starts& a, std::uint64_t a_end, const epoch_starts& b,
                            std::uint64_t b_end) {
  const std::uint64_t end = std::min(a_end, b_end);
  // The epoch of a seq changes only at a start of either log: compare there.
  std::vector<std::uint64_t> boundaries = {1};
  for (const auto& e : a) boundaries.push_back(e.start);
  for (const auto& e : b) boundaries.push_back(e.start);
  std::sort(boundaries.begin(), boundaries.end());
  for (const auto s : boundaries) {
    if (s > end) break;
    if (s >= 1 && epoch_of(a, s) != epoch_of(b, s)) return s - 1;
  }
  return end;
}

epoch_starts truncate_epochs(epoch_starts epochs, std::uint64_t end) {
  // An epoch that began past the new end wrote nothing left in the log;
  // the newest remaining one goes on (the replica appends under it until
  // it learns of a newer one).
  while (epochs.size() > 1 && epochs.back().start > end) epochs.pop_back();
  return epochs;
}

bool note_append(epoch_starts& epochs, std::uint64_t leader_epoch, std::uint64_t seq) {
  if (!epochs.empty() && epochs.back().leader_epoch > leader_epoch) return false;
  if (epochs.empty() || epochs.back().leader_epoch < leader_epoch) epochs.push_back({leader_epoch, seq});
  return true;
}

}  // namespace tidings::core
