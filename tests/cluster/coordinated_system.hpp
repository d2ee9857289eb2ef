#pragma once

// An actor system on CAF's test coordinator, for the deterministic tests of
// cluster actors: messages run when the test says (sched->run()), timers
// fire when it advances time or triggers them.

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

namespace tidings::testing {

struct coordinated_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;

  coordinated_system() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
  }

  // Runs the coordinator until `done` holds. Messages from other threads
  // (a store write completing on the committer's) run once they arrive.
  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline)
      if (!sched->try_run_once()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(done());
  }
};

}  // namespace tidings::testing
