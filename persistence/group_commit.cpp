#include "persistence/group_commit.hpp"

#include <rocksdb/write_batch.h>

#include <vector>

namespace tidings::persistence {

group_committer::group_committer(store& db, std::chrono::milliseconds batch_interval, write_guard* guard)
    : db_(db), guard_(guard), batch_interval_(batch_interval), thread_([this] { run(); }) {}

group_committer::~group_committer() {
  stop();
}

void group_committer::submit(write_set ws, callback done) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      pending_.emplace_back(std::move(ws), std::move(done));
      wake_.notify_one();
      return;
    }
  }
  done(status::error("group committer is stopped"));
}

void group_committer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  // A callback that stops its own committer must not join itself.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void group_committer::release_stream(std::uint64_t stream_id) {
  std::lock_guard lock(mutex_);
  fenced_.erase(stream_id);
}

std::uint64_t group_committer::batches_written() const {
  std::lock_guard lock(mutex_);
  return batches_;
}

std::uint64_t group_committer::sets_written() const {
  std::lock_guard lock(mutex_);
  return sets_;
}

status group_committer::write_guarded(rocksdb::WriteBatch& batch) {
  if (!guard_) return db_.write(batch);
  if (auto s = guard_->admit(batch.GetDataSize(), [this] { return db_.resume(); }); !s.ok()) return s;
  auto s = db_.write(batch);
  if (!s.ok()) guard_->failed(s.message());
  return s;
}

// Sleeps on the condition variable until there is work. The only timed wait
// is the `batch` durability's deferred fsync, armed by a write, so an idle
// committer does not wake at all.
void group_committer::run() {
  using clock = std::chrono::steady_clock;
  clock::time_point sync_due;
  std::unique_lock lock(mutex_);
  for (;;) {
    // A store whose write or fsync failed is not touched again until it
    // resumed (RocksDB aborts on a WAL used after an error).
    if (unsynced_ && !guard_failed() && (clock::now() >= sync_due || (stopping_ && pending_.empty()))) {
      unsynced_ = false;
      lock.unlock();
      auto synced = db_.sync_wal();
      if (!synced.ok() && guard_) guard_->failed(synced.message());
      lock.lock();
      if (!synced.ok() && !stopping_) {
        // Retry after another interval; acknowledged writes are in the WAL
        // already, only their fsync is outstanding.
        unsynced_ = true;
        sync_due = clock::now() + batch_interval_;
      }
      continue;
    }
    if (!pending_.empty()) {
      // A stream whose earlier log write was refused or failed writes no
      // more until its hub recovered: a later write would land past a hole.
      std::vector<std::pair<write_set, callback>> taken, fenced;
      for (auto& entry : pending_)
        (entry.first.fence_on_failure && fenced_.contains(entry.first.stream_id) ? fenced : taken)
            .push_back(std::move(entry));
      pending_.clear();
      lock.unlock();

      for (auto& entry : fenced)
        entry.second(
            status::error("an earlier write of this stream failed; it takes writes again once "
                          "its head was read back"));
      if (taken.empty()) {
        lock.lock();
        continue;
      }
      rocksdb::WriteBatch batch;
      for (const auto& entry : taken) db_.add_to_batch(entry.first, batch);
      status result = write_guarded(batch);

      lock.lock();
      if (result.ok()) {
        ++batches_;
        sets_ += taken.size();
      } else {
        for (const auto& entry : taken)
          if (entry.first.fence_on_failure) fenced_.insert(entry.first.stream_id);
      }
      if (result.ok() && db_.mode() == durability::batch && !unsynced_) {
        unsynced_ = true;
        sync_due = clock::now() + batch_interval_;
      }
      lock.unlock();
      for (auto& entry : taken) entry.second(result);
      lock.lock();
      continue;
    }
    if (stopping_) return;
    if (guard_blocks()) {
      // Refusing: look again now and then, so that readiness and the
      // metrics turn back once space returns, with nothing to write.
      lock.unlock();
      guard_->recheck([this] { return db_.resume(); });
      lock.lock();
      if (guard_blocks() && pending_.empty() && !stopping_)
        wake_.wait_for(lock, write_guard::retry_every / 2);
      continue;
    }
    if (unsynced_)
      wake_.wait_until(lock, sync_due);
    else
      wake_.wait(lock);
  }
}

}  // namespace tidings::persistence
