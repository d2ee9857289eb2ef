#pragma once

// Drives an io_context from a test until a condition holds, bounded.

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>

namespace tidings::net {

// Runs the loop until `done` holds or `limit` passes; false on timeout.
inline bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& done,
                      std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  ioc.restart();
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    ioc.run_one_for(std::chrono::milliseconds(20));
    if (ioc.stopped()) ioc.restart();
  }
  return true;
}

}  // namespace tidings::net
