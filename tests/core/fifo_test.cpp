#include "core/fifo.hpp"

#include <memory>
#include <string>

#include <catch2/catch.hpp>

using tidings::core::fifo;

TEST_CASE("fifo keeps order, keeps its storage when drained and gives it back on clear", "[fifo]") {
  fifo<std::string> q;
  CHECK(q.empty());
  CHECK(q.capacity() == 0);
  for (int i = 0; i < 5; ++i) q.push_back(std::to_string(i));
  CHECK(q.size() == 5);
  for (int i = 0; i < 5; ++i) {
    REQUIRE_FALSE(q.empty());
    CHECK(q.front() == std::to_string(i));
    q.pop_front();
  }
  CHECK(q.empty());
  CHECK(q.capacity() >= 5);  // reused by the next pushes
  q.push_back("again");
  CHECK(q.front() == "again");
  q.clear();
  CHECK(q.empty());
  CHECK(q.capacity() == 0);
}

TEST_CASE("fifo that never drains stays bounded by what it holds", "[fifo]") {
  fifo<int> q;
  int next_in = 0;
  int next_out = 0;
  // Always three or four queued: without compaction the storage would grow
  // with every push.
  for (int round = 0; round < 10000; ++round) {
    q.push_back(next_in++);
    if (q.size() > 3) {
      REQUIRE(q.front() == next_out++);
      q.pop_front();
    }
  }
  CHECK(q.size() == 3);
  CHECK(q.capacity() <= 64);
  while (!q.empty()) {
    REQUIRE(q.front() == next_out++);
    q.pop_front();
  }
  CHECK(next_out == next_in);
}

TEST_CASE("fifo releases a popped element at once", "[fifo]") {
  fifo<std::shared_ptr<int>> q;
  auto first = std::make_shared<int>(1);
  q.push_back(first);
  q.push_back(std::make_shared<int>(2));
  CHECK(first.use_count() == 2);
  q.pop_front();
  CHECK(first.use_count() == 1);
  CHECK(*q.front() == 2);
  q.clear();
  CHECK(q.empty());
  CHECK(q.capacity() == 0);
}
