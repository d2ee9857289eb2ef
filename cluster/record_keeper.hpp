#pragma once

// The record keeper: this node's hands on the replicated streams' agreed
// records in etcd (ADR 0021). Every change is computed by a rule of
// core/stream_leadership from the record exactly as read, and written by a
// compare-and-swap on that read's revision; when another change won
// meanwhile, the rule is applied again to the record that won (a few
// times), so two nodes acting on one record never both succeed and a node
// acting on an old record fails.
//
//   ask ──get──> decide ──write──> swap ──swapped──> answer
//                  │  └─keep/refuse──> answer   └─lost the race──> decide again
//
// A swap whose answer was lost (etcd unreachable mid-call) may have been
// written: the keeper reads again and counts it done when the record holds
// exactly what it wrote. Records are plain protobuf: whoever may write
// etcd is trusted with them (TLS and etcd's own authentication are issue 24).

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/stream_key.hpp"
#include "cluster/control_plane.hpp"
#include "core/stream_leadership.hpp"

namespace tidings::cluster {

struct record_request {
  enum class kind {
    read,     // the record as it is
    claim,    // a new owner before it serves the stream: core::plan_claim
    succeed,  // the log was pulled from `member`: core::succeed
    shrink,   // the leader drops `member` from the ISR
    expand,   // the leader lets `member` in (it holds member_end, must hold must_hold)
    force,    // an operator's unclean election of `me` (core::force_elect), as log epoch new_log_epoch
  } what = kind::read;
  actors::stream_key stream;
  core::member_id me;
  core::member_id member;
  std::uint64_t at_epoch = 0;  // shrink, expand: the leader epoch the asker leads at; succeed: pulled at
  bool has_copy = false;       // claim
  std::uint64_t my_end = 0;    // claim, succeed: the asker's log end
  std::uint64_t member_end = 0;
  std::uint64_t must_hold = 0;
  std::uint64_t new_log_epoch = 0;    // force
  std::vector<core::member_id> live;  // the members etcd lists now
};

struct record_answer {
  bool ok = false;
  // The asker acted on a record that has moved on (another leader, another
  // epoch): it leads no more.
  bool deposed = false;
  std::optional<core::stream_record> record;                   // as it is after the ask (none: absent)
  std::string reason;                                          // refused or failed: why
  core::claim_plan::kind plan = core::claim_plan::kind::hold;  // claim: what to do
  core::member_id from;                                        // claim: pull from whom
};

using record_request_ptr = std::shared_ptr<const record_request>;
using record_answer_ptr = std::shared_ptr<const record_answer>;

using record_atom = caf::atom_constant<caf::atom("rrecord")>;
using record_got_atom = caf::atom_constant<caf::atom("rgot")>;
using record_swapped_atom = caf::atom_constant<caf::atom("rswapped")>;
using record_retry_atom = caf::atom_constant<caf::atom("rretry")>;

using record_keeper_actor = caf::typed_actor<
    caf::replies_to<record_atom, record_request_ptr>::with<record_answer_ptr>,
    // The control plane's answers (token, error, found, value, mod revision).
    caf::reacts_to<record_got_atom, std::uint64_t, std::string, bool, std::string, std::int64_t>,
    caf::reacts_to<record_swapped_atom, std::uint64_t, std::string, bool, bool, std::string, std::int64_t>,
    caf::reacts_to<record_retry_atom, std::uint64_t>>;

struct record_keeper_config {
  std::shared_ptr<control_plane> plane;
  std::string prefix = "/tidings/";  // records under prefix + "streams/"
  // How long one ask may take (etcd unreachable: it answers the error).
  std::chrono::milliseconds patience{3000};
};

struct record_keeper_state {
  static inline const char* name = "cluster-records";

  struct job {
    record_request_ptr ask;
    caf::typed_response_promise<record_answer_ptr> reply;
    std::string written;  // what the last swap wrote, in case its answer was lost
    int decisions = 0;
    caf::actor_clock::time_point deadline;
  };
  record_keeper_config cfg;
  std::uint64_t next_token = 1;
  std::map<std::uint64_t, job> jobs;
};

record_keeper_actor::behavior_type record_keeper(
    record_keeper_actor::stateful_pointer<record_keeper_state> self, record_keeper_config cfg);

// The record's key: prefix + "streams/" + tenant + "/" + stream, with '%'
// and '/' in the names escaped.
std::string record_key(const std::string& prefix, const actors::stream_key& stream);

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::record_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::record_answer_ptr)
