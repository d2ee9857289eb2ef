#pragma once

// A watch's on_event filter: Lua 5.4 source run once per event in a sandbox
// (base without load/dofile/loadfile/require/collectgarbage, string, table,
// math, utf8), bounded per event in wall time, instructions and built-in
// calls, and per filter in memory. Not thread-safe: one filter belongs to one
// actor. The sandbox itself is filters/sandbox.hpp.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

struct lua_State;

namespace tidings::filters {

struct filter_limits {
  std::chrono::milliseconds budget{2000};        // wall time per event
  std::uint64_t max_instructions = 200'000'000;  // per event
  std::size_t max_memory_bytes = 64u << 20;      // the whole Lua state
  int max_builtin_calls = 10;                    // read_resource + list_resources per event
};

// The read-only built-ins a filter may call; the broker implements them for
// the watch's tenant. Called on the filter's thread, synchronously.
class resource_reader {
 public:
  virtual ~resource_reader() = default;
  struct read_result {
    nlohmann::json value;  // parsed JSON, else the text as a JSON string
    std::string error;     // non-empty: the read failed
  };
  virtual read_result read_resource(const std::string& uri) = 0;
  // [{"uri","name","description","mime_type","subscribable"}, ...]
  virtual nlohmann::json list_resources() = 0;
};

struct filter_result {
  enum class outcome { keep, drop, error };
  outcome what = outcome::drop;
  // keep: the notice line (a returned string as is, a table or other value as
  // compact JSON, or what the filter printed when it returned nothing).
  // error: the Lua error, e.g. `on_event:3: attempt to call a nil value (global 'fmt')`.
  std::string text;
};

class lua_filter {
 public:
  // Compiles `source` (text only; bytecode is refused) in a fresh sandbox.
  // Returns nullptr with *error set (`on_event:2: unexpected symbol near ...`)
  // on failure. `reader` may be null (the built-ins then report an error);
  // it must outlive the filter.
  static std::unique_ptr<lua_filter> compile(std::string_view source, filter_limits limits,
                                             resource_reader* reader, std::string* error);
  ~lua_filter();
  lua_filter(const lua_filter&) = delete;
  lua_filter& operator=(const lua_filter&) = delete;

  // Runs the chunk with the global `event` set to `event` (JSON null becomes
  // nil; arrays become 1-based tables). Globals the chunk sets persist to the
  // next run. After a budget or memory error the sandbox is rebuilt (its
  // globals are lost) so one runaway event cannot poison the next.
  filter_result run(const nlohmann::json& event);

  // The validation dry run at watch start: runs on a sample event and returns
  // the error text of a failure, except a failure from a missing key (using a
  // nil field or local of the sample, e.g. `attempt to index a nil value
  // (field 'object')`), which is fine. A nil *global* (`fmt` undefined) is
  // not fine. Errors from the sandbox (forbidden names, budget, memory) fail.
  // Runs in a throwaway sandbox: this filter's own globals are untouched.
  std::optional<std::string> dry_run(const nlohmann::json& sample);

 private:
  lua_filter() = default;
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tidings::filters
