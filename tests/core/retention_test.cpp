#include "core/retention.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;

TEST_CASE("first_kept_by_count keeps at most max_events", "[retention]") {
  CHECK(first_kept_by_count(1, 100, 10) == 91);
  CHECK(first_kept_by_count(1, 10, 10) == 1);
  CHECK(first_kept_by_count(1, 11, 10) == 2);
  CHECK(first_kept_by_count(1, 5, 10) == 1);
  CHECK(first_kept_by_count(95, 100, 10) == 95);  // never below first_seq
  CHECK(first_kept_by_count(50, 100, 1) == 100);
}

TEST_CASE("first_kept_by_count with zero and empty ranges", "[retention]") {
  CHECK(first_kept_by_count(1, 100, 0) == 1);    // unlimited
  CHECK(first_kept_by_count(1, 0, 10) == 1);     // empty new stream
  CHECK(first_kept_by_count(51, 50, 10) == 51);  // empty after trimming
  CHECK(first_kept_by_count(1, ~0ull, 1) == ~0ull);
  CHECK(first_kept_by_count(0, ~0ull, 0) == 0);
}

TEST_CASE("check_resume", "[retention]") {
  // Retained [10, 20].
  CHECK(check_resume(9, 10, 20) == resume_check::ok);  // next needed is 10
  CHECK(check_resume(15, 10, 20) == resume_check::ok);
  CHECK(check_resume(20, 10, 20) == resume_check::ok);  // at head: live
  CHECK(check_resume(8, 10, 20) == resume_check::too_old);
  CHECK(check_resume(0, 10, 20) == resume_check::too_old);
  CHECK(check_resume(21, 10, 20) == resume_check::ahead_of_head);
  CHECK(check_resume(~0ull, 10, 20) == resume_check::ahead_of_head);
}

TEST_CASE("check_resume on empty streams", "[retention]") {
  CHECK(check_resume(0, 1, 0) == resume_check::ok);
  CHECK(check_resume(1, 1, 0) == resume_check::ahead_of_head);
  // Everything trimmed: retained range (50, 49] is empty; the head is still 49.
  CHECK(check_resume(49, 50, 49) == resume_check::ok);
  CHECK(check_resume(48, 50, 49) == resume_check::too_old);
  CHECK(check_resume(~0ull, 0, ~0ull) == resume_check::ok);
}

TEST_CASE("physical_trim_due deletes in chunks of a quarter of the retention", "[retention]") {
  CHECK(trim_chunk(10000) == 2500);
  CHECK(trim_chunk(100) == 64);  // never per event on small retentions
  // Deleted below 1000 already: waits until 2500 more are trimmed.
  CHECK(physical_trim_due(1000, 1001, 10000) == 0);
  CHECK(physical_trim_due(1000, 3499, 10000) == 0);
  CHECK(physical_trim_due(1000, 3500, 10000) == 3500);
  // Nothing trimmed logically yet, or behind what is deleted.
  CHECK(physical_trim_due(1000, 1000, 10000) == 0);
  CHECK(physical_trim_due(1000, 900, 10000) == 0);
}

TEST_CASE("physical_trim_due after a restart deletes everything before first_seq at once", "[retention]") {
  CHECK(physical_trim_due(0, 1, 10000) == 0);  // nothing to delete
  CHECK(physical_trim_due(0, 2, 10000) == 2);
  CHECK(physical_trim_due(0, 123456, 10000) == 123456);
}
