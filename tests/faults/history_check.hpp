#pragma once

// The fault suite's checker (issue 26): after a round, what every
// publisher got acknowledged against what every session read, through
// every node. A round is clean when
//   - every acknowledged event is read exactly once, in order, under the
//     cursor it was acknowledged with, by every read-back;
//   - no cursor was acknowledged for two events, nor read with another
//     event's payload;
//   - nothing was read that was never acknowledged (every publish is
//     retried with its Idempotency-Key until acknowledged, so a stored
//     event always has its acknowledgement);
//   - no session was told to resync (nothing acknowledged was lost, so
//     none was needed).
// Pure: the rounds feed it what they recorded.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "tests/support/sse_reading.hpp"

namespace tidings::testing {

struct read_back {
  std::string who;  // "node 1 throughout", "node 2 late", ...
  std::vector<data_event> events;
  std::vector<std::string> controls;  // "event data" of each control event
};

struct history_report {
  std::size_t acknowledged = 0;
  std::size_t lost = 0;              // acknowledged, missing from some read-back
  std::size_t reassigned = 0;        // a cursor with two events (acknowledged or read)
  std::size_t duplicated = 0;        // read twice by one session
  std::size_t out_of_order = 0;      // not contiguous within one session
  std::size_t unacknowledged = 0;    // read, never acknowledged
  std::size_t resyncs = 0;           // control events sessions got
  std::vector<std::string> details;  // the first problems, for the report

  bool clean() const {
    return lost == 0 && reassigned == 0 && duplicated == 0 && out_of_order == 0 && unacknowledged == 0 &&
           resyncs == 0;
  }
  std::string summary() const;
};

// `acked`: event index -> the cursor its publish was acknowledged with, as
// each publisher recorded it (a list: one index acknowledged twice with two
// cursors is a reassignment too).
history_report check_history(const std::vector<std::pair<int, std::string>>& acked,
                             const std::vector<read_back>& reads);

// A watch's notice stream, which no publisher acknowledged (the watch
// wrote it). Clean when every read-back holds the same notices: each cursor
// with one payload, contiguous, none twice, no resync, and every notice any
// session read in each read-back (`lost` counts those missing). Whether the
// notices cover every change the watch read is not checked: a watch
// restarted after its node was lost begins from a fresh baseline (ADR 0016).
// `acknowledged` counts the notices.
history_report check_notices(const std::vector<read_back>& reads);

}  // namespace tidings::testing
