#pragma once

// Waits between reconnect attempts: 1, 2, 4, 8, 16, 16, ... seconds, back to
// 1 s once a connection got as far as the server's hello.

#include <algorithm>
#include <chrono>

namespace tidings::cli {

class reconnect_backoff {
 public:
  std::chrono::seconds next() {
    const auto delay = current_;
    current_ = std::min(current_ * 2, cap_);
    return delay;
  }
  void reset() { current_ = std::chrono::seconds(1); }

 private:
  static constexpr std::chrono::seconds cap_{16};
  std::chrono::seconds current_{1};
};

}  // namespace tidings::cli
