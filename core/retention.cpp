#include "core/retention.hpp"

#include <algorithm>

namespace tidings::core {

std::uint64_t first_kept_by_count(std::uint64_t first_seq, std::uint64_t head_seq, std::uint64_t max_events) {
  // An inconsistent range (first past head + 1) is left alone rather than
  // moved backwards: trimming must never resurrect a deleted seq.
  if (max_events == 0 || first_seq > head_seq) return first_seq;
  std::uint64_t retained = head_seq - first_seq + 1;
  if (retained <= max_events) return first_seq;
  return head_seq - max_events + 1;
}

std::uint64_t trim_chunk(std::uint64_t max_events) {
  return std::max<std::uint64_t>(64, max_events / 4);
}

std::uint64_t physical_trim_due(std::uint64_t deleted_below, std::uint64_t first_seq,
                                std::uint64_t max_events) {
  if (first_seq <= deleted_below) return 0;
  if (deleted_below == 0) return first_seq > 1 ? first_seq : 0;
  return first_seq - deleted_below >= trim_chunk(max_events) ? first_seq : 0;
}

resume_check check_resume(std::uint64_t after_seq, std::uint64_t first_seq, std::uint64_t head_seq) {
  if (after_seq > head_seq) return resume_check::ahead_of_head;
  // The next event the subscriber needs is after_seq + 1 (no overflow: it is
  // at most head_seq + 1 here, and first_seq <= head_seq + 1 in a sane range).
  if (after_seq < first_seq && after_seq + 1 < first_seq) return resume_check::too_old;
  return resume_check::ok;
}

}  // namespace tidings::core
