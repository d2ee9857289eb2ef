#pragma once

// Opening a store and committing through a group committer, for the
// persistence tests. Catch2 assertions: a failure ends the test case.

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"

namespace tidings::persistence::testing {

inline std::unique_ptr<store> open_store(const std::string& dir, durability d = durability::sync) {
  std::unique_ptr<store> db;
  auto s = store::open(dir, d, &db);
  INFO(s.message());
  REQUIRE(s.ok());
  REQUIRE(db);
  return db;
}

// Submits through a committer and waits (bounded) for the callback.
inline status commit(group_committer& gc, write_set ws) {
  auto done = std::make_shared<std::promise<status>>();
  auto result = done->get_future();
  gc.submit(std::move(ws), [done](const status& s) { done->set_value(s); });
  REQUIRE(result.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return result.get();
}

}  // namespace tidings::persistence::testing
