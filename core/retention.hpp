#pragma once

#include <cstdint>

namespace tidings::core {

struct retention_policy {
  std::uint64_t max_events = 10000;  // 0: unlimited
  std::int64_t max_age_ms = 0;       // 0: unlimited
};

// The retained range of a stream is [first_seq, head_seq]; an empty stream has
// first_seq == head_seq + 1. Returns the first seq to keep so that at most
// max_events remain (never beyond head_seq + 1, never below first_seq).
std::uint64_t first_kept_by_count(std::uint64_t first_seq, std::uint64_t head_seq, std::uint64_t max_events);

// Where a resume from `after_seq` stands against the retained range.
enum class resume_check { ok, too_old, ahead_of_head };
resume_check check_resume(std::uint64_t after_seq, std::uint64_t first_seq, std::uint64_t head_seq);

}  // namespace tidings::core
