#include "persistence/write_guard.hpp"

#include <sys/statvfs.h>

#include <algorithm>

namespace tidings::persistence {
namespace {

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

write_guard::write_guard(std::uint64_t reserve_bytes, free_space_fn free_space)
    : reserve_(reserve_bytes), free_space_(std::move(free_space)) {
  health_.reserve_bytes = reserve_;
  if (auto free = free_space_ ? free_space_() : std::nullopt) health_.free_bytes = *free;
}

write_guard::free_space_fn write_guard::free_space_of(std::string dir) {
  return [dir = std::move(dir)]() -> std::optional<std::uint64_t> {
    struct statvfs s {};
    if (::statvfs(dir.c_str(), &s) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
  };
}

void write_guard::on_change(std::function<void(const health&)> f) {
  std::lock_guard lock(mutex_);
  on_change_ = std::move(f);
}

write_guard::health write_guard::current() const {
  std::lock_guard lock(mutex_);
  return health_;
}

void write_guard::enter_locked(state s, std::string reason) {
  health_.now = s;
  health_.reason = std::move(reason);
  now_.store(s, std::memory_order_release);
}

void write_guard::notify(const std::optional<health>& changed) {
  if (!changed) return;
  std::function<void(const health&)> f;
  {
    std::lock_guard lock(mutex_);
    f = on_change_;
  }
  if (f) f(*changed);
}

status write_guard::admit_locked(std::size_t bytes, const status* resumed, std::optional<health>* changed) {
  auto before = health_.now;
  auto set = [&](state s, std::string reason) {
    enter_locked(s, std::move(reason));
    if (s != before) *changed = health_;
  };
  if (health_.now == state::failed) {
    if (!resumed) return status::error(health_.reason);
    if (!resumed->ok()) {
      set(state::failed,
          "the store's last write failed (" + failure_ + ") and it has not recovered: " + resumed->message());
      return status::error(health_.reason);
    }
  }
  auto free = free_space_ ? free_space_() : std::nullopt;
  if (free) health_.free_bytes = *free;
  // Once full, writes wait for a margin above the reserve: a batch admitted
  // at its edge would only make the next one refused (and the log flap).
  auto needed = reserve_ + bytes + (health_.now == state::full ? resume_margin() : 0);
  if (free && reserve_ > 0 && *free < needed) {
    set(state::full, "the disk of the data directory is nearly full: " + mib(*free) + " free, " +
                         mib(reserve_) +
                         " kept in reserve (storage-reserve-mb); writes resume when space is freed");
    return status::error(health_.reason);
  }
  set(state::writable, {});
  return {};
}

std::uint64_t write_guard::resume_margin() const {
  return std::max<std::uint64_t>(reserve_ / 8, std::uint64_t{1} << 20);
}

status write_guard::admit(std::size_t bytes, const std::function<status()>& resume, clock::time_point now) {
  // RocksDB's recovery may flush memtables: it runs outside the lock, which
  // every publish takes (current()). Only the committer thread gets here.
  bool try_resume = false;
  {
    std::lock_guard lock(mutex_);
    if (health_.now == state::failed && now >= next_resume_) {
      next_resume_ = now + retry_every;
      try_resume = true;
    }
  }
  std::optional<status> resumed;
  if (try_resume) resumed = resume();
  std::optional<health> changed;
  status result;
  {
    std::lock_guard lock(mutex_);
    result = admit_locked(bytes, resumed ? &*resumed : nullptr, &changed);
  }
  notify(changed);
  return result;
}

void write_guard::recheck(const std::function<status()>& resume, clock::time_point now) {
  (void)admit(0, resume, now);
}

void write_guard::failed(const std::string& why, clock::time_point now) {
  std::optional<health> changed;
  {
    std::lock_guard lock(mutex_);
    failure_ = why;
    if (health_.now != state::failed) {
      enter_locked(state::failed,
                   "the store's last write failed: " + why + "; writes resume once it recovers");
      changed = health_;
    }
    next_resume_ = now + retry_every;
  }
  notify(changed);
}

}  // namespace tidings::persistence
