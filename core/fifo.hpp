#pragma once

// A first-in-first-out queue that owns no memory until its first push and
// gives it back on clear(). An SSE session's outgoing queue is empty most of
// its life; std::deque allocates a map and a 512-byte node even then, which
// was an eighth of what an idle session cost the node. Draining keeps the
// storage, so a busy session does not allocate on every write.
//
// Storage is one vector read from `head_`; the consumed front is cut off
// once it is at least half of the vector, so push and pop stay amortised
// O(1) while the queue never drains.

#include <cstddef>
#include <utility>
#include <vector>

namespace tidings::core {

template <class T>
class fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }

  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }

  void push_back(T item) { items_.push_back(std::move(item)); }

  // The element leaves moved-from; what it held (a shared frame) is
  // released now, not when the storage is compacted.
  void pop_front() {
    items_[head_] = T{};
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
      return;
    }
    if (head_ >= min_compaction && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // Drops every element and gives the storage back.
  void clear() {
    std::vector<T>().swap(items_);
    head_ = 0;
  }

  // Elements the storage has room for now (0 while empty), for tests.
  std::size_t capacity() const { return items_.capacity(); }

 private:
  static constexpr std::size_t min_compaction = 16;

  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace tidings::core
