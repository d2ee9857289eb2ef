#pragma once

// A token bucket for rate limits: `rate` tokens a second up to `burst`.
// Time comes from the caller, so tests drive it with a fake clock.

#include <algorithm>
#include <chrono>

namespace tidings::core {

class token_bucket {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  token_bucket(double rate_per_second, double burst, time_point now)
      : rate_(rate_per_second), burst_(burst), tokens_(burst), last_(now) {}

  // Takes n tokens if there are that many; a request larger than the burst
  // is never admitted (the caller refuses it with a clearer message).
  bool take(double n, time_point now) {
    refill(now);
    if (n > tokens_) return false;
    tokens_ -= n;
    return true;
  }
  // How long until n tokens are there (zero if they are).
  std::chrono::milliseconds wait_for(double n, time_point now) {
    refill(now);
    if (n <= tokens_ || rate_ <= 0) return std::chrono::milliseconds(0);
    return std::chrono::milliseconds(static_cast<long long>((n - tokens_) / rate_ * 1000.0) + 1);
  }
  void reconfigure(double rate_per_second, double burst) {
    rate_ = rate_per_second;
    burst_ = burst;
    tokens_ = std::min(tokens_, burst_);
  }
  double burst() const { return burst_; }

 private:
  void refill(time_point now) {
    if (now <= last_) return;
    std::chrono::duration<double> dt = now - last_;
    tokens_ = std::min(burst_, tokens_ + dt.count() * rate_);
    last_ = now;
  }

  double rate_;
  double burst_;
  double tokens_;
  time_point last_;
};

}  // namespace tidings::core
