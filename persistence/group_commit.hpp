#pragma once

// Group commit: many hubs submit write_sets; one thread merges everything
// pending into one WriteBatch, writes it (one fsync under `sync`), then calls
// each submitter's callback. Concurrent publishers therefore share fsyncs.
// Under `batch` durability the WAL fsync follows within `batch_interval`.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "persistence/store.hpp"
#include "persistence/write_guard.hpp"

namespace tidings::persistence {

class group_committer {
 public:
  using callback = std::function<void(const status&)>;

  // guard (optional, outlives the committer): asked before every batch; a
  // refused batch fails without reaching the store.
  explicit group_committer(store& db, std::chrono::milliseconds batch_interval = std::chrono::milliseconds(5),
                           write_guard* guard = nullptr);
  ~group_committer();  // stop()
  group_committer(const group_committer&) = delete;
  group_committer& operator=(const group_committer&) = delete;

  // Thread-safe. `done` runs on the committer thread once the write is
  // durable under the store's durability, or failed. After stop(), `done`
  // is called at once with an error.
  void submit(write_set ws, callback done);

  // Writes everything submitted so far, then ends the thread. Idempotent.
  void stop();

  // The guard given at construction (null: none), for callers that refuse
  // work before submitting it while the store does not take writes.
  const write_guard* guard() const { return guard_; }

  // The hub of `stream_id` read its head back from the store after a
  // refused or failed write (write_set::fence_on_failure): its writes go on.
  void release_stream(std::uint64_t stream_id);

  std::uint64_t batches_written() const;
  std::uint64_t sets_written() const;

 private:
  void run();
  // The batch, if the guard lets it through (and the guard told of a failure).
  status write_guarded(rocksdb::WriteBatch& batch);
  bool guard_blocks() const { return guard_ && !guard_->writable(); }
  // A failed store is not touched at all (its WAL neither); a full one is
  // still fsynced (what was acknowledged under `batch` needs it).
  bool guard_failed() const { return guard_ && guard_->now() == write_guard::state::failed; }

  store& db_;
  write_guard* guard_;
  std::chrono::milliseconds batch_interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<write_set, callback>> pending_;
  bool stopping_ = false;
  bool unsynced_ = false;           // `batch` durability: a write awaits its fsync
  std::set<std::uint64_t> fenced_;  // streams whose log write was refused or failed
  std::uint64_t batches_ = 0;
  std::uint64_t sets_ = 0;
  std::thread thread_;
};

}  // namespace tidings::persistence
