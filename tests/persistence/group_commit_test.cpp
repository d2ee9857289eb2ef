#include "persistence/group_commit.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

using namespace tidings;
using namespace tidings::persistence;
using tidings::persistence::testing::temp_dir;

namespace {

std::unique_ptr<store> open_store(const std::string& dir, durability d) {
  std::unique_ptr<store> db;
  auto s = store::open(dir, d, &db);
  INFO(s.message());
  REQUIRE(s.ok());
  return db;
}

write_set one_event(std::uint64_t stream_id, std::uint64_t seq) {
  write_set ws;
  ws.stream_id = stream_id;
  stored_event e;
  e.seq = seq;
  e.ev.path = "/t" + std::to_string(stream_id) + "/" + std::to_string(seq);
  e.ev.data_json = std::to_string(seq);
  ws.events.push_back(std::move(e));
  return ws;
}

// Counts callbacks per submit; each must arrive exactly once and ok.
struct tally {
  explicit tally(std::size_t n) : calls(n) {}
  std::vector<std::atomic<int>> calls;
  std::atomic<int> failures{0};
  std::promise<void> all_done;
  std::atomic<std::size_t> finished{0};

  group_committer::callback make(std::size_t index) {
    return [this, index](const status& s) {
      if (!s.ok()) ++failures;
      ++calls[index];
      if (++finished == calls.size()) all_done.set_value();
    };
  }
};

void hammer(durability d, int threads, int per_thread) {
  temp_dir tmp;
  auto db = open_store(tmp.db(), d);
  group_committer gc(*db, std::chrono::milliseconds(2));

  const auto total = static_cast<std::size_t>(threads * per_thread);
  tally t(total);
  auto done = t.all_done.get_future();

  // The first set's callback holds the committer thread until every worker
  // has submitted, so the rest must pile up: grouping is then certain rather
  // than a matter of thread timing.
  std::promise<void> submitted;
  auto gate = submitted.get_future();
  std::promise<status> first;
  auto first_result = first.get_future();
  std::promise<void> entered;
  auto gate_entered = entered.get_future();
  gc.submit(one_event(1000, 1), [&](const status& s) {
    entered.set_value();
    gate.wait_for(std::chrono::seconds(30));
    first.set_value(s);
  });
  REQUIRE(gate_entered.wait_for(std::chrono::seconds(10)) == std::future_status::ready);

  std::latch start(threads);
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      start.arrive_and_wait();  // all threads submit at once, so sets pile up
      for (int i = 0; i < per_thread; ++i) {
        auto seq = static_cast<std::uint64_t>(i + 1);
        auto stream = static_cast<std::uint64_t>(w + 1);
        gc.submit(one_event(stream, seq), t.make(static_cast<std::size_t>(w * per_thread + i)));
      }
    });
  for (auto& worker : workers) worker.join();
  submitted.set_value();
  REQUIRE(first_result.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  CHECK(first_result.get().ok());
  REQUIRE(done.wait_for(std::chrono::seconds(60)) == std::future_status::ready);

  CHECK(t.failures == 0);
  for (auto& c : t.calls) REQUIRE(c == 1);
  CHECK(gc.sets_written() == total + 1);
  CHECK(gc.batches_written() >= 2);
  CHECK(gc.batches_written() < gc.sets_written());  // grouping happened

  for (int w = 0; w < threads; ++w) {
    std::vector<stored_event> events;
    REQUIRE(db->read_events(static_cast<std::uint64_t>(w + 1), 0, ~0ull, 10000, &events).ok());
    REQUIRE(events.size() == static_cast<std::size_t>(per_thread));
    for (std::size_t i = 0; i < events.size(); ++i) {
      CHECK(events[i].seq == i + 1);
      CHECK(events[i].ev.data_json == std::to_string(i + 1));
    }
  }
  gc.stop();
  // Nothing further was counted by stopping.
  CHECK(gc.sets_written() == total + 1);
}

}  // namespace

TEST_CASE("8 threads x 200 submits under sync durability", "[group_commit]") {
  hammer(durability::sync, 8, 200);
}

TEST_CASE("8 threads x 200 submits under batch durability", "[group_commit]") {
  hammer(durability::batch, 8, 200);
}

TEST_CASE("8 threads x 200 submits under no durability", "[group_commit]") {
  hammer(durability::none, 8, 200);
}

TEST_CASE("submit after stop fails at once", "[group_commit]") {
  temp_dir tmp;
  auto db = open_store(tmp.db(), durability::sync);
  group_committer gc(*db);
  gc.stop();
  gc.stop();  // idempotent
  bool called = false;
  status result;
  gc.submit(one_event(1, 1), [&](const status& s) {
    called = true;
    result = s;
  });
  CHECK(called);  // synchronously, on this thread
  CHECK_FALSE(result.ok());
  std::vector<stored_event> events;
  REQUIRE(db->read_events(1, 0, 10, 10, &events).ok());
  CHECK(events.empty());
}

TEST_CASE("stop writes what is pending", "[group_commit]") {
  temp_dir tmp;
  auto db = open_store(tmp.db(), durability::batch);
  std::atomic<int> ok{0};
  {
    group_committer gc(*db, std::chrono::milliseconds(50));
    for (std::uint64_t seq = 1; seq <= 100; ++seq)
      gc.submit(one_event(1, seq), [&](const status& s) { ok += s.ok() ? 1 : 0; });
    gc.stop();
    CHECK(ok == 100);
  }
  std::vector<stored_event> events;
  REQUIRE(db->read_events(1, 0, 1000, 1000, &events).ok());
  CHECK(events.size() == 100);
}

TEST_CASE("the destructor stops the committer", "[group_commit]") {
  temp_dir tmp;
  auto db = open_store(tmp.db(), durability::sync);
  std::atomic<int> ok{0};
  {
    group_committer gc(*db);
    for (std::uint64_t seq = 1; seq <= 10; ++seq)
      gc.submit(one_event(2, seq), [&](const status& s) { ok += s.ok() ? 1 : 0; });
  }
  CHECK(ok == 10);
}

TEST_CASE("batch durability survives a reopen", "[group_commit]") {
  temp_dir tmp;
  {
    auto db = open_store(tmp.db(), durability::batch);
    group_committer gc(*db, std::chrono::milliseconds(1));
    std::promise<status> done;
    auto result = done.get_future();
    gc.submit(one_event(3, 1), [&](const status& s) { done.set_value(s); });
    REQUIRE(result.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK(result.get().ok());
  }
  auto db = open_store(tmp.db(), durability::batch);
  std::vector<stored_event> events;
  REQUIRE(db->read_events(3, 0, 10, 10, &events).ok());
  REQUIRE(events.size() == 1);
  CHECK(events[0].ev.path == "/t3/1");
}
