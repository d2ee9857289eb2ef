// persistence/write_guard: the free-space reserve and the stop after a
// failed write, with a fake file system and a fake clock; and a group
// committer whose guard refuses, which must leave the store untouched.

#include "persistence/write_guard.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "persistence/group_commit.hpp"
#include "temp_dir.hpp"

using namespace tidings::persistence;
using tidings::persistence::testing::temp_dir;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t mib = 1 << 20;

struct fake_disk {
  std::optional<std::uint64_t> free = 100 * mib;
  write_guard::free_space_fn fn() {
    return [this] { return free; };
  }
};

// A store whose group committer asks `guard`, for one-event writes.
struct guarded_store {
  explicit guarded_store(write_guard& guard) {
    REQUIRE(store::open(dir.db(), durability::sync, &db).ok());
    committer.emplace(*db, 5ms, &guard);
  }
  status submit(std::uint64_t stream, std::uint64_t seq, bool fence) {
    write_set ws;
    ws.stream_id = stream;
    ws.events.push_back({seq, {}});
    ws.fence_on_failure = fence;
    std::promise<status> done;
    auto f = done.get_future();
    committer->submit(std::move(ws), [&done](const status& s) { done.set_value(s); });
    return f.get();
  }
  std::vector<stored_event> events(std::uint64_t stream) {
    std::vector<stored_event> out;
    REQUIRE(db->read_events(stream, 0, 10, 10, &out).ok());
    return out;
  }
  temp_dir dir;
  std::unique_ptr<store> db;
  std::optional<group_committer> committer;  // stops before the store closes
};

}  // namespace

TEST_CASE("writes stop under the reserve and resume when space returns", "[write-guard]") {
  fake_disk disk;
  write_guard g(10 * mib, disk.fn());
  std::vector<write_guard::state> changes;
  g.on_change([&](const write_guard::health& h) { changes.push_back(h.now); });
  auto no_resume = [] { return status(); };
  CHECK(g.admit(mib, no_resume).ok());
  disk.free = 10 * mib + mib / 2;  // a batch of 1 MiB would eat into the reserve
  auto refused = g.admit(mib, no_resume);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.message().find("10 MiB free, 10 MiB kept in reserve") != std::string::npos);
  CHECK(g.current().now == write_guard::state::full);
  // Once full, writes wait for a margin above the reserve (an eighth of it,
  // at least 1 MiB), so the state does not flap at its edge.
  CHECK_FALSE(g.admit(0, no_resume).ok());
  disk.free = 10 * mib + 10 * mib / 8 - 1;
  CHECK_FALSE(g.admit(0, no_resume).ok());
  disk.free = 10 * mib + 10 * mib / 8;
  CHECK(g.admit(0, no_resume).ok());
  disk.free = 5 * mib;
  CHECK_FALSE(g.admit(0, no_resume).ok());
  disk.free = 50 * mib;
  g.recheck(no_resume);  // what the committer does while idle
  CHECK(g.writable());
  CHECK(g.current().free_bytes == 50 * mib);
  CHECK(changes == std::vector{write_guard::state::full, write_guard::state::writable,
                               write_guard::state::full, write_guard::state::writable});
  // Reserve 0: only failures refuse; an unreadable file system as well.
  write_guard off(0, disk.fn());
  disk.free = 0;
  CHECK(off.admit(mib, no_resume).ok());
  disk.free = std::nullopt;
  CHECK(g.admit(mib, no_resume).ok());
}

TEST_CASE("after a failed write nothing passes until the store resumes", "[write-guard]") {
  fake_disk disk;
  write_guard g(mib, disk.fn());
  auto t0 = write_guard::clock::time_point{} + 1h;
  int resumes = 0;
  bool resume_ok = false;
  auto resume = [&] {
    ++resumes;
    return resume_ok ? status() : status::error("IO error: No space left on device");
  };
  g.failed("IO error: No space left on device", t0);
  CHECK(g.current().now == write_guard::state::failed);
  // Within the retry interval the store is not even asked.
  CHECK_FALSE(g.admit(10, resume, t0 + 10ms).ok());
  CHECK(resumes == 0);
  auto refused = g.admit(10, resume, t0 + write_guard::retry_every);
  CHECK(resumes == 1);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.message().find("has not recovered") != std::string::npos);
  CHECK_FALSE(g.admit(10, resume, t0 + write_guard::retry_every + 10ms).ok());
  CHECK(resumes == 1);
  resume_ok = true;
  CHECK(g.admit(10, resume, t0 + 3 * write_guard::retry_every).ok());
  CHECK(resumes == 2);
  CHECK(g.writable());
}

TEST_CASE("a group committer whose guard refuses writes nothing", "[write-guard]") {
  fake_disk disk;
  disk.free = 0;
  write_guard g(mib, disk.fn());
  guarded_store db(g);
  CHECK_FALSE(db.submit(7, 1, false).ok());
  CHECK(db.committer->batches_written() == 0);
  CHECK(db.events(7).empty());
  disk.free = 100 * mib;
  CHECK(db.submit(7, 1, false).ok());
  CHECK(db.events(7).size() == 1);
}

TEST_CASE("after a refused log write a stream writes nothing more until its hub recovered", "[write-guard]") {
  fake_disk disk;
  disk.free = 0;
  write_guard g(mib, disk.fn());
  guarded_store db(g);
  CHECK_FALSE(db.submit(7, 1, true).ok());
  // Space is back, but seq 2 of stream 7 would land past the hole seq 1 left.
  disk.free = 100 * mib;
  auto fenced = db.submit(7, 2, true);
  REQUIRE_FALSE(fenced.ok());
  CHECK(fenced.message().find("earlier write of this stream failed") != std::string::npos);
  CHECK(db.submit(8, 1, true).ok());  // other streams are not held back
  db.committer->release_stream(7);
  CHECK(db.submit(7, 1, true).ok());
  auto events = db.events(7);
  REQUIRE(events.size() == 1);
  CHECK(events[0].seq == 1);
}
