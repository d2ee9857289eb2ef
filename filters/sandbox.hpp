#pragma once

// One Lua state running one filter chunk: the allocator that caps its memory,
// the count hook that bounds each run, the restricted globals and the
// read-only built-ins. lua_filter owns one for the live filter and builds a
// throwaway one for each dry run.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "filters/lua_filter.hpp"

struct lua_State;
struct lua_Debug;

namespace tidings::filters {

// Why a run was stopped from outside the filter's own logic. Any of these
// leaves the state suspect (half-updated globals, a heap at the cap), so the
// owner throws the sandbox away and builds a fresh one from the source.
enum class abort_reason { none, time, instructions, memory, internal };

class sandbox {
 public:
  struct outcome {
    filter_result result;
    abort_reason abort = abort_reason::none;
  };

  // A fresh state with the chunk compiled, or nullptr with *error set to the
  // syntax error, the bytecode refusal or the memory limit.
  static std::unique_ptr<sandbox> create(std::string_view source, const filter_limits& limits,
                                         resource_reader* reader, std::string* error);
  ~sandbox();
  sandbox(const sandbox&) = delete;
  sandbox& operator=(const sandbox&) = delete;

  // Sets the global `event` and runs the chunk once, within the per-event
  // budget. Never throws a Lua error: everything runs under lua_pcall.
  outcome run(const nlohmann::json& event);

 private:
  struct allocator {
    std::size_t used = 0;  // bytes held by the state plus the print buffer
    std::size_t limit = 0;
  };

  sandbox(const filter_limits& limits, resource_reader* reader);
  static sandbox& of(lua_State* L);

  void begin_event();
  int protected_call(int (*fn)(lua_State*), void* arg);
  std::string error_text(int status);
  [[noreturn]] void abort_run(lua_State* L, abort_reason why);
  void count_builtin_call(lua_State* L);

  // lua_Alloc over the whole state: refuses growth past the memory limit.
  static void* allocate(void* ud, void* ptr, std::size_t osize, std::size_t nsize);
  // LUA_MASKCOUNT hook: stops the run past the instruction or time budget.
  static void hook(lua_State* L, lua_Debug* ar);
  // Protected entry points (arg 1 is a light userdata).
  static int setup(lua_State* L);
  static int run_chunk(lua_State* L);
  // Replacements and additions in the filter's globals.
  static int missing_global(lua_State* L);
  static int print(lua_State* L);
  static int pcall(lua_State* L);
  static int xpcall(lua_State* L);
  static int guarded_handler(lua_State* L);
  static int finish_pcall(lua_State* L, int status, int extra);
  static int setmetatable(lua_State* L);
  static int no_string_dump(lua_State* L);
  static int read_resource(lua_State* L);
  static int list_resources(lua_State* L);

  filter_limits limits_;
  resource_reader* reader_;
  allocator alloc_;
  lua_State* L_ = nullptr;
  int hook_every_ = 1000;  // instructions between hook calls
  // Formatted once, so the hook and the allocator paths never allocate in C++.
  std::string time_message_;
  std::string instructions_message_;
  std::string memory_message_;

  // Per event.
  std::chrono::steady_clock::time_point deadline_;
  std::uint64_t instructions_ = 0;
  int builtin_calls_ = 0;
  bool printed_ = false;
  std::string print_buffer_;
  abort_reason abort_ = abort_reason::none;
};

}  // namespace tidings::filters
