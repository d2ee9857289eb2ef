#pragma once

// For state that settles on its own time and can only be read, not awaited
// (admin views gathered from every cluster member, a head after a handoff):
// read it again with growing pauses until it holds or a deadline passes.
// Events a test can wait for are awaited with a timeout instead.

#include <algorithm>
#include <chrono>
#include <thread>

namespace tidings::testing {

// Calls `settled` at once, then after pauses of 25 ms doubling up to 250 ms,
// until it returns true (-> true) or the next pause would pass `timeout`
// (-> false).
template <class Settled>
bool poll_until(std::chrono::milliseconds timeout, Settled settled) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::milliseconds pause{25};
  for (;;) {
    if (settled()) return true;
    if (std::chrono::steady_clock::now() + pause > deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds{250});
  }
}

}  // namespace tidings::testing
