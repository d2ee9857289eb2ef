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

// Retention is exact in the stream's metadata (first_seq), which every read
// honours; the store deletes trimmed events in chunks. One range delete per
// publish left a range tombstone per event in RocksDB, and every read then
// walked all of them (a 1 000-event page took 10 s after 20 000 trims).
// Returns the seq to delete below now, or 0 to wait: the events
// [deleted_below, first_seq) still stored are at least trim_chunk(max_events).
// `deleted_below` is 0 when unknown (after a restart): the first trim then
// covers everything before first_seq.
std::uint64_t physical_trim_due(std::uint64_t deleted_below, std::uint64_t first_seq,
                                std::uint64_t max_events);
// How many trimmed events may wait for their delete: a quarter of the
// retention (at least 64), so the store holds at most 25 % more than retained.
std::uint64_t trim_chunk(std::uint64_t max_events);

// Where a resume from `after_seq` stands against the retained range.
enum class resume_check { ok, too_old, ahead_of_head };
resume_check check_resume(std::uint64_t after_seq, std::uint64_t first_seq, std::uint64_t head_seq);

}  // namespace tidings::core
