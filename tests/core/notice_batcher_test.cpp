#include "core/notice_batcher.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace tidings::core;
using namespace std::chrono_literals;

namespace {

using lines = std::vector<std::string>;

// The fake clock: plain time points.
const notice_batcher::time_point t0{};

notice_batcher::time_point at(std::chrono::milliseconds offset) {
  return t0 + offset;
}

const std::string times = " \xc3\x97";  // " ×"

}  // namespace

TEST_CASE("a notice is due after the quiet period", "[notice_batcher]") {
  notice_batcher batcher;
  CHECK_FALSE(batcher.pending());
  CHECK_FALSE(batcher.deadline());
  CHECK_FALSE(batcher.take_due(at(100s)));

  REQUIRE(batcher.add("", "one", t0));
  CHECK(batcher.pending());
  CHECK(batcher.deadline() == at(3s));
  CHECK_FALSE(batcher.take_due(at(2999ms)));

  // Each line moves the flush later.
  REQUIRE(batcher.add("", "two", at(2s)));
  CHECK(batcher.deadline() == at(5s));
  CHECK_FALSE(batcher.take_due(at(3s)));
  CHECK(batcher.take_due(at(5s)) == lines{"one", "two"});
  CHECK_FALSE(batcher.pending());
  CHECK_FALSE(batcher.take_due(at(6s)));
}

TEST_CASE("a steady stream is flushed at max_wait", "[notice_batcher]") {
  notice_batcher batcher;
  for (int i = 0; i < 15; ++i) {
    CHECK_FALSE(batcher.take_due(at(std::chrono::seconds(i))));
    REQUIRE(batcher.add("", "line " + std::to_string(i), at(std::chrono::seconds(i))));
  }
  CHECK(batcher.deadline() == at(15s));
  CHECK_FALSE(batcher.take_due(at(14999ms)));
  auto notice = batcher.take_due(at(15s));
  REQUIRE(notice);
  CHECK(notice->size() == 15);
  CHECK(notice->front() == "line 0");
  CHECK(notice->back() == "line 14");
}

TEST_CASE("a flushed notice starts a new burst", "[notice_batcher]") {
  notice_batcher batcher;
  REQUIRE(batcher.add("", "a", t0));
  REQUIRE(batcher.add("", "b", at(14s)));
  CHECK(batcher.take_due(at(15s)) == lines{"a", "b"});
  REQUIRE(batcher.add("", "c", at(16s)));
  CHECK(batcher.deadline() == at(19s));  // not capped by the old burst's t0 + 15 s
  REQUIRE(batcher.add("", "d", at(18s)));
  CHECK(batcher.deadline() == at(21s));
  CHECK(batcher.take_all() == lines{"c", "d"});
  REQUIRE(batcher.add("", "e", at(40s)));
  CHECK(batcher.deadline() == at(43s));
}

TEST_CASE("quiet zero is due at once", "[notice_batcher]") {
  notice_batcher batcher({0ms, 15s, 20, 100});
  REQUIRE(batcher.add("", "now", at(7s)));
  CHECK(batcher.deadline() == at(7s));
  CHECK(batcher.take_due(at(7s)) == lines{"now"});
}

TEST_CASE("a notice holds at most max_lines lines, then +N more", "[notice_batcher]") {
  notice_batcher batcher;
  for (int i = 0; i < 25; ++i) REQUIRE(batcher.add("", "line " + std::to_string(i), t0));
  auto notice = batcher.take_all();
  REQUIRE(notice.size() == 21);
  for (int i = 0; i < 20; ++i) CHECK(notice[i] == "line " + std::to_string(i));
  CHECK(notice[20] == "+5 more");
}

TEST_CASE("identical lines collapse to line ×N in first-seen order", "[notice_batcher]") {
  notice_batcher batcher;
  for (const char* line : {"b", "a", "b", "c", "b", "a"}) REQUIRE(batcher.add("", line, t0));
  CHECK(batcher.take_all() == lines{"b" + times + "3", "a" + times + "2", "c"});
}

TEST_CASE("collapsing counts distinct lines against the cap", "[notice_batcher]") {
  notice_batcher batcher({3s, 15s, 2, 100});
  for (const char* line : {"a", "b", "c", "a", "d", "c", "b", "c"}) REQUIRE(batcher.add("", line, t0));
  CHECK(batcher.take_all() == lines{"a" + times + "2", "b" + times + "2", "+2 more"});
}

TEST_CASE("max_lines zero keeps only the count", "[notice_batcher]") {
  notice_batcher batcher({3s, 15s, 0, 100});
  REQUIRE(batcher.add("", "a", t0));
  REQUIRE(batcher.add("", "a", t0));
  REQUIRE(batcher.add("", "b", t0));
  CHECK(batcher.pending());
  CHECK(batcher.take_due(at(3s)) == lines{"+2 more"});
}

TEST_CASE("a line equal to the object's last line is dropped", "[notice_batcher]") {
  notice_batcher batcher;
  CHECK(batcher.add("cm/a", "ADDED cm/a", t0));
  CHECK_FALSE(batcher.add("cm/a", "ADDED cm/a", t0));
  CHECK(batcher.add("cm/b", "ADDED cm/a", t0));  // same text, other object
  CHECK(batcher.add("cm/a", "MODIFIED cm/a", t0));
  CHECK(batcher.add("cm/a", "ADDED cm/a", t0));  // equal to an older line, not the last
  CHECK(batcher.take_all() == lines{"ADDED cm/a" + times + "3", "MODIFIED cm/a"});
  // The memory outlives the notice.
  CHECK_FALSE(batcher.add("cm/a", "ADDED cm/a", at(1s)));
  CHECK_FALSE(batcher.pending());
}

TEST_CASE("lines without an object key are never deduped", "[notice_batcher]") {
  notice_batcher batcher;
  CHECK(batcher.add("", "GAP 3 events missed", t0));
  CHECK(batcher.add("", "GAP 3 events missed", t0));
  CHECK(batcher.take_all() == lines{"GAP 3 events missed" + times + "2"});
}

TEST_CASE("dedupe memory forgets the least recently updated object", "[notice_batcher]") {
  notice_batcher batcher({3s, 15s, 20, 2});
  REQUIRE(batcher.add("k1", "a", t0));
  REQUIRE(batcher.add("k2", "b", t0));
  REQUIRE(batcher.add("k1", "a2", t0));  // k1 is now the most recently updated
  REQUIRE(batcher.add("k3", "c", t0));   // evicts k2
  CHECK_FALSE(batcher.add("k1", "a2", t0));
  CHECK_FALSE(batcher.add("k3", "c", t0));
  CHECK(batcher.add("k2", "b", t0));  // forgotten, so accepted again (evicts k1)
  CHECK(batcher.add("k1", "a2", t0));
}

TEST_CASE("no dedupe memory means no dedupe", "[notice_batcher]") {
  notice_batcher batcher({3s, 15s, 20, 0});
  CHECK(batcher.add("k", "a", t0));
  CHECK(batcher.add("k", "a", t0));
}

TEST_CASE("take_all flushes whether due or not", "[notice_batcher]") {
  notice_batcher batcher;
  CHECK(batcher.take_all().empty());
  REQUIRE(batcher.add("", "x", t0));
  CHECK(batcher.take_all() == lines{"x"});
  CHECK_FALSE(batcher.pending());
  CHECK_FALSE(batcher.deadline());
}

TEST_CASE("huge durations saturate instead of overflowing", "[notice_batcher]") {
  using ms = std::chrono::milliseconds;
  notice_batcher batcher({ms::max(), ms::max(), 20, 10});
  auto late = notice_batcher::time_point::max() - 1s;
  REQUIRE(batcher.add("", "x", late));
  CHECK(batcher.deadline() == notice_batcher::time_point::max());
  CHECK_FALSE(batcher.take_due(late));

  notice_batcher negative({ms(-5), ms::min(), 20, 10});
  REQUIRE(negative.add("", "x", at(1s)));
  CHECK(negative.deadline() == at(1s));
}
