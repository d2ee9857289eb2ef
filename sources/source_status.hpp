#pragma once

// The figures a source shows in the list views, written by the source actor
// and read by the registry (another actor), hence the lock.

#include <mutex>

#include "actors/source_registry_actor.hpp"

namespace tidings::sources {

class source_status {
 public:
  explicit source_status(actors::source_info initial) : info_(std::move(initial)) {}

  actors::source_info get() const {
    std::lock_guard lock(mutex_);
    return info_;
  }
  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mutex_);
    f(info_);
  }

 private:
  mutable std::mutex mutex_;
  actors::source_info info_;
};

}  // namespace tidings::sources
