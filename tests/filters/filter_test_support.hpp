#pragma once

// Helpers shared by the filter tests: compile-or-fail and small limits that
// keep the runaway cases fast.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "filters/lua_filter.hpp"

namespace tidings::filters::testing {

// Limits small enough that loops, bombs and recursion end in well under a
// second even in a sanitizer build.
inline filter_limits small_limits() {
  filter_limits limits;
  limits.budget = std::chrono::milliseconds(2000);
  limits.max_instructions = 5'000'000;
  limits.max_memory_bytes = 8u << 20;
  return limits;
}

inline std::unique_ptr<lua_filter> must_compile(std::string_view source,
                                                filter_limits limits = small_limits(),
                                                resource_reader* reader = nullptr) {
  std::string error;
  auto filter = lua_filter::compile(source, limits, reader, &error);
  INFO(error);
  REQUIRE(filter);
  return filter;
}

// Runs once and expects a kept line.
inline std::string line_of(lua_filter& filter, const nlohmann::json& event = nlohmann::json::object()) {
  const filter_result result = filter.run(event);
  INFO(result.text);
  REQUIRE(result.what == filter_result::outcome::keep);
  return result.text;
}

inline std::string error_of(lua_filter& filter, const nlohmann::json& event = nlohmann::json::object()) {
  const filter_result result = filter.run(event);
  INFO(result.text);
  REQUIRE(result.what == filter_result::outcome::error);
  return result.text;
}

}  // namespace tidings::filters::testing
