#pragma once

// The rules that decide who leads a replicated stream's log (ADR 0021):
// Kafka's model with in-sync replicas and leader epochs (KIP-101), as pure
// functions over the agreed record that etcd holds for each stream. The
// cluster applies a rule's result only by a compare-and-swap on the record
// it was computed from, so two nodes acting on the same record cannot both
// succeed, and a node acting on an old record fails.
//
//   record (etcd)          changed by            precondition (beyond the CAS)
//   ------------------     ------------------    --------------------------------
//   isr - {m}              shrink_isr, leader    at its epoch; m is not the leader
//   isr + {m}              expand_isr, leader    at its epoch; m holds all the leader holds
//   leader, epoch + 1      elect, an ISR member  the old leader's lease is gone
//   new log, isr = {c}     force_elect, operator no ISR member alive; loses data
//
// Sequence numbers are the cursor's seqs: a log holds seqs 1..end. Each
// replica keeps its own leader-epoch starts (the first seq written under
// each leader epoch), from which a follower finds where its log and the
// leader's part (common_prefix) and truncates there, never the other way.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tidings::core {

using member_id = std::string;

// The first seq written under a leader epoch.
struct epoch_start {
  std::uint64_t leader_epoch = 0;
  std::uint64_t start = 0;
  bool operator==(const epoch_start&) const = default;
};
using epoch_starts = std::vector<epoch_start>;  // ascending in both fields

struct stream_record {
  member_id leader;                // "" while no leader could be elected
  std::uint64_t leader_epoch = 0;  // counts every change of leader
  std::vector<member_id> isr;      // sorted; the leader is in it
  // The cursor's <epoch>: the log's identity. A clean change of leader keeps
  // it; only a log given up (force_elect) starts a new one.
  std::uint64_t log_epoch = 0;
  epoch_starts epochs;  // where each leader epoch began in the log
  bool operator==(const stream_record&) const = default;

  bool in_isr(const member_id& m) const;
};

// A rule's verdict: the record to write by compare-and-swap, or why not.
struct rule_result {
  bool ok = false;
  stream_record record;
  std::string reason;  // when refused: a sentence for logs and errors
};

// The log's end when its current leader was elected (0 for a new stream):
// what the leader's copy must hold to lead, and an ISR member to come in.
std::uint64_t elected_end(const stream_record& r);

// A new stream: its first leader and replicas, all empty, so all in sync.
stream_record first_record(const member_id& leader, const std::vector<member_id>& replicas,
                           std::uint64_t log_epoch);

// The leader drops member from the ISR (it fell behind or its lease went).
rule_result shrink_isr(const stream_record& r, const member_id& by, std::uint64_t at_epoch,
                       const member_id& member);

// The leader adds member back once the member holds every seq the leader
// holds (leader_end), not merely what this leader has acknowledged: a new
// leader does not know how far its predecessor acknowledged, and a member
// let in short of that would be electable without acknowledged events (the
// model test finds exactly this loss with the high-watermark rule).
rule_result expand_isr(const stream_record& r, const member_id& by, std::uint64_t at_epoch,
                       const member_id& member, std::uint64_t member_end, std::uint64_t leader_end);

// candidate becomes leader at a new epoch: it is alive and in the ISR, and
// the recorded leader is not alive (its lease expired) or is candidate
// itself coming back. The ISR keeps only live members. candidate_end is the
// candidate's log end: its epoch starts after it.
rule_result elect(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                  const std::vector<member_id>& live);

// candidate holds the whole log of `from` (pulled while `from` wrote
// nothing more: a handoff) and leads it at a new epoch. `from` is the
// leader (live and quiesced, or gone), or, once the leader's lease is
// gone, an ISR member. The ISR keeps its live members and gains candidate.
rule_result succeed(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                    const member_id& from, const std::vector<member_id>& live);

// What a member that placement makes a stream's owner does with the record
// (nullopt: none yet) before it serves the stream: lead on the log it has
// (as the recorded leader, by creating the record, or by winning an
// election from the ISR), pull the log from `from` first (then `succeed`),
// or hold: no live member holds what was acknowledged, and no unclean
// election is made on its own (ADR 0021).
struct claim_plan {
  enum class kind { lead, create, elect, pull, hold } what = kind::hold;
  member_id from;      // pull: whose log
  rule_result change;  // create, elect and lead (a new leader epoch): the record to write
  std::string reason;  // hold: why, for logs and refused writes
};
claim_plan plan_claim(const std::optional<stream_record>& r, const member_id& me, bool has_copy,
                      std::uint64_t my_end, const std::vector<member_id>& live);

// The leader's next change of its ISR towards its followers as they are
// (in_sync: the followers that get every write): members that fell out go
// first, so the ISR is never larger than what the leader waits for; then
// the ones in sync come in. ends: each follower's durable end; must_hold:
// what a member must hold to come in (the log at the leader's election and
// everything acknowledged since).
struct isr_step {
  enum class kind { none, shrink, expand } what = kind::none;
  member_id member;
};
isr_step next_isr_step(const stream_record& r, const member_id& me, const std::vector<member_id>& in_sync,
                       const std::map<member_id, std::uint64_t>& ends, std::uint64_t must_hold);

// The highest seq the leader may acknowledge (may_acknowledge for every seq
// up to it; 0 when none).
std::uint64_t acknowledgeable(const stream_record& r, const member_id& me, std::uint64_t my_epoch,
                              const std::map<member_id, std::uint64_t>& durable_ends, std::size_t min_insync);

// The operator's unclean election, only when no ISR member is alive: the
// log continues on candidate as a new log (new log_epoch, so every cursor
// of the old one resyncs); whatever only the lost members held is gone.
rule_result force_elect(const stream_record& r, const member_id& candidate, std::uint64_t candidate_end,
                        const std::vector<member_id>& live, std::uint64_t new_log_epoch);

// Whether the leader may acknowledge seq: it leads the record at its epoch,
// the ISR has at least min_insync members, and every ISR member holds seq
// durably (durable_ends: each member's durable log end, the leader's own
// included).
bool may_acknowledge(const stream_record& r, const member_id& me, std::uint64_t my_epoch, std::uint64_t seq,
                     const std::map<member_id, std::uint64_t>& durable_ends, std::size_t min_insync);

// The leader epoch a seq was written under, by a replica's epoch starts (0
// before the first start).
std::uint64_t epoch_of(const epoch_starts& epochs, std::uint64_t seq);

// The last seq two logs agree on: seqs written under the same leader epoch
// are the same event (one leader per epoch, appending), so the logs agree
// up to the first seq whose epochs differ. A follower truncates its log to
// this before appending the leader's.
std::uint64_t common_prefix(const epoch_starts& a, std::uint64_t a_end, const epoch_starts& b,
                            std::uint64_t b_end);

// A replica's epoch starts after truncating its log to end.
epoch_starts truncate_epochs(epoch_starts epochs, std::uint64_t end);

// Notes that seq was appended under leader_epoch; false (nothing changed)
// when the log already holds a newer epoch, which a replica must refuse.
bool note_append(epoch_starts& epochs, std::uint64_t leader_epoch, std::uint64_t seq);

}  // namespace tidings::core
