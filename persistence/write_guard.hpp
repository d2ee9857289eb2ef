#pragma once

// Keeps writes off a disk that is nearly full, and off a store whose last
// write failed, so that RocksDB never meets ENOSPC in the middle of a write
// (issue 28: Debian's librocksdb 7.8 then aborted the process on the next
// WAL write). Before each group commit the committer asks admit(): a batch
// is refused while the data directory's free space is under the reserve,
// and after a failed write until the store has resumed. Refused batches are
// never written, so nothing half-written can surface later.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "persistence/status.hpp"

namespace tidings::persistence {

class write_guard {
 public:
  enum class state { writable, full, failed };
  struct health {
    state now = state::writable;
    std::string reason;  // "" while writable
    std::uint64_t free_bytes = 0;
    std::uint64_t reserve_bytes = 0;
  };
  using free_space_fn = std::function<std::optional<std::uint64_t>()>;
  using clock = std::chrono::steady_clock;

  // free_space: bytes free to us on the data directory's file system
  // (nullopt when it cannot be read: then only failures refuse).
  write_guard(std::uint64_t reserve_bytes, free_space_fn free_space);
  // statvfs of `dir`.
  static free_space_fn free_space_of(std::string dir);

  // Whether a batch of `bytes` may be written now. After a failure it calls
  // `resume` (the store's recovery) at most once per retry interval.
  status admit(std::size_t bytes, const std::function<status()>& resume,
               clock::time_point now = clock::now());
  // A write failed: nothing more is written until resume() succeeds.
  void failed(const std::string& why, clock::time_point now = clock::now());
  // Looks again without a batch (the committer does, while refusing, so
  // readiness and metrics turn back once space returns).
  void recheck(const std::function<status()>& resume, clock::time_point now = clock::now());

  health current() const;
  // The state alone, without the lock: every publish asks (hub.cpp).
  state now() const { return now_.load(std::memory_order_acquire); }
  bool writable() const { return now() == state::writable; }
  // Called (outside the lock) whenever the state changes, for the log.
  void on_change(std::function<void(const health&)> f);

  static constexpr std::chrono::milliseconds retry_every{1000};

 private:
  // `resumed`: the outcome of the store's recovery, when it was tried for this call.
  status admit_locked(std::size_t bytes, const status* resumed, std::optional<health>* changed);
  void notify(const std::optional<health>& changed);
  // Sets health_.now and now_ together (under the lock).
  void enter_locked(state s, std::string reason);
  // Free space above the reserve a full disk needs before writes resume.
  std::uint64_t resume_margin() const;

  const std::uint64_t reserve_;
  free_space_fn free_space_;
  mutable std::mutex mutex_;
  health health_;
  std::atomic<state> now_{state::writable};  // health_.now, mirrored for now()
  std::string failure_;                      // the failed write's error, kept while resuming
  clock::time_point next_resume_{};
  std::function<void(const health&)> on_change_;
};

}  // namespace tidings::persistence
