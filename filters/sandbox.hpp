#pragma once

// One Lua state running one filter chunk: the allocator that caps its memory,
// the count hook that bounds each run, the restricted globals and the
// read-only built-ins. lua_filter owns one for the live filter and builds a
// throwaway one for each dry run; scope_expression owns one per expression
// and drives it through call() instead of run().

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "filters/lua_filter.hpp"
#include "filters/pattern_cost.hpp"

struct lua_State;
struct lua_Debug;

namespace tidings::filters {

// Why a run was stopped from outside the filter's own logic. Any of these
// leaves the state suspect (half-updated globals, a heap at the cap), so the
// owner throws the sandbox away and builds a fresh one from the source.
enum class abort_reason { none, time, instructions, memory, internal };

// Who runs in the sandbox. The defaults are the watch filter's; a caller
// with a budget of milliseconds on a shared thread (scope_expression)
// checks the budget more often and caps patterns lower.
struct sandbox_profile {
  // The chunk name (`on_event:3: ...`) and the prefix of the sandbox's own
  // messages (`on_event: exceeded the per-event budget of ...`).
  std::string name = "on_event";
  // The pattern guard's cap on worst-case steps (pattern_cost.hpp).
  double max_pattern_steps = filters::max_pattern_steps;
  // Instructions between budget checks. C functions (string.rep, table.sort,
  // long concatenations) run between two checks, so the wall-time budget can
  // be overrun by this many instructions' worth of them.
  int hook_interval = 1000;
  // Also check the budget on every function call (Lua or C), so the overrun
  // is at most one C function's work (bounded by the memory limit) plus
  // hook_interval instructions.
  bool check_on_calls = false;
};

class sandbox {
 public:
  struct outcome {
    filter_result result;
    abort_reason abort = abort_reason::none;
  };

  // A fresh state with the chunk compiled, or nullptr with *error set to the
  // syntax error, the bytecode refusal or the memory limit.
  static std::unique_ptr<sandbox> create(std::string_view source, const filter_limits& limits,
                                         resource_reader* reader, std::string* error,
                                         const sandbox_profile& profile = {});
  ~sandbox();
  sandbox(const sandbox&) = delete;
  sandbox& operator=(const sandbox&) = delete;

  // Sets the global `event` and runs the chunk once, within the per-event
  // budget. Never throws a Lua error: everything runs under lua_pcall.
  outcome run(const nlohmann::json& event);

  // For callers that drive the state themselves instead of run().
  struct call_outcome {
    bool ok = true;
    std::string error;                        // when !ok: the Lua error, or the budget or memory message
    abort_reason abort = abort_reason::none;  // not none: throw the sandbox away
  };
  // Runs `fn` under lua_pcall with `arg` as a light userdata at index 1,
  // within a fresh per-run budget, like run() does for the chunk. The stack
  // is empty again afterwards.
  call_outcome call(int (*fn)(lua_State*), void* arg);
  // Inside call(): pushes the function compiled from create()'s source.
  static void push_chunk(lua_State* L);
  // Bytes the state holds now, as the memory limit counts them.
  std::size_t memory_used() const { return alloc_.used; }

 private:
  struct allocator {
    std::size_t used = 0;  // bytes held by the state plus the print buffer
    std::size_t limit = 0;
  };

  sandbox(const filter_limits& limits, resource_reader* reader, const sandbox_profile& profile);
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
  sandbox_profile profile_;
  allocator alloc_;
  lua_State* L_ = nullptr;
  int hook_every_ = 1000;  // instructions between hook calls
  // Formatted once, so the hook and the allocator paths never allocate in C++.
  std::string chunk_name_;  // "=" + profile_.name
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
