#include "filters/sandbox.hpp"

#include "filters/pattern_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

#include <lua.hpp>

#include "filters/lua_json.hpp"

// Error handling here rests on lua5.4-c++: lua_error throws a C++ exception
// (a `lua_longjmp*`, not derived from std::exception) that lua_pcall catches.
// So C++ locals unwind properly through Lua errors, and the C functions below
// catch only `const std::exception&` (or nothing) around C++ work, turning it
// into a Lua error after the handler: a broader catch would swallow the
// unwinding Lua itself must see, and a C++ exception left to Lua's own
// `catch (...)` surfaces as a status-less error with no message.

namespace tidings::filters {
namespace {

// Its address keys the compiled chunk in the registry.
const char chunk_key = 0;

// Names a filter might reach for that the sandbox leaves out; reading one
// raises an error naming it instead of handing back nil.
constexpr std::array<const char*, 11> forbidden_globals = {
    "os",         "io",     "debug",    "package",   "require",       "load",
    "loadstring", "dofile", "loadfile", "coroutine", "collectgarbage"};

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = kib * kib;

std::string byte_size(std::size_t bytes) {
  if (bytes != 0 && bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
  if (bytes != 0 && bytes % kib == 0) return std::to_string(bytes / kib) + " KiB";
  return std::to_string(bytes) + " bytes";
}

struct setup_args {
  std::string_view source;
};

struct run_args {
  const nlohmann::json* event = nullptr;
  filter_result result;
};

}  // namespace

sandbox::sandbox(const filter_limits& limits, resource_reader* reader, const sandbox_profile& profile)
    : limits_(limits),
      reader_(reader),
      profile_(profile),
      hook_every_(static_cast<int>(std::clamp<std::uint64_t>(
          limits.max_instructions, 1, static_cast<std::uint64_t>(std::max(profile.hook_interval, 1))))),
      chunk_name_("=" + profile.name),  // errors read `on_event:3: ...`
      time_message_(profile.name + ": exceeded the per-event budget of " +
                    std::to_string(limits.budget.count()) + " ms"),
      instructions_message_(profile.name + ": exceeded the per-event budget of " +
                            std::to_string(limits.max_instructions) + " instructions"),
      memory_message_(profile.name + ": exceeded the memory limit of " + byte_size(limits.max_memory_bytes)) {
  alloc_.limit = limits.max_memory_bytes;
}

sandbox::~sandbox() {
  if (L_ != nullptr) {
    // Nothing should run while closing (setmetatable refuses __gc, so there
    // are no finalizers), but should anything, the hook stops it at once.
    abort_ = abort_reason::time;
    lua_close(L_);
  }
}

std::unique_ptr<sandbox> sandbox::create(std::string_view source, const filter_limits& limits,
                                         resource_reader* reader, std::string* error,
                                         const sandbox_profile& profile) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (!source.empty() && source.front() == LUA_SIGNATURE[0]) {
    *error = profile.name + ": precompiled Lua bytecode is not accepted; " + profile.name +
             " must be Lua source text";
    return nullptr;
  }
  std::unique_ptr<sandbox> box(new sandbox(limits, reader, profile));
  box->L_ = lua_newstate(&sandbox::allocate, &box->alloc_);
  if (box->L_ == nullptr) {
    *error = box->memory_message_;
    return nullptr;
  }
  *static_cast<sandbox**>(lua_getextraspace(box->L_)) = box.get();
  setup_args args{source};
  const int status = box->protected_call(&sandbox::setup, &args);
  if (status != LUA_OK) {
    *error = box->error_text(status);
    return nullptr;
  }
  lua_settop(box->L_, 0);
  const int mask = LUA_MASKCOUNT | (profile.check_on_calls ? LUA_MASKCALL : 0);
  lua_sethook(box->L_, &sandbox::hook, mask, box->hook_every_);
  return box;
}

sandbox& sandbox::of(lua_State* L) {
  return **static_cast<sandbox**>(lua_getextraspace(L));
}

void* sandbox::allocate(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* a = static_cast<allocator*>(ud);
  const std::size_t old = ptr != nullptr ? osize : 0;  // without a block, osize is a type tag
  if (nsize == 0) {
    std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc): lua_Alloc contract
    a->used -= old;
    return nullptr;
  }
  // Growth past the limit is refused; Lua then collects garbage, retries and
  // finally raises "not enough memory" (LUA_ERRMEM). Shrinking always works,
  // as Lua requires.
  if (nsize > old && nsize - old > a->limit - std::min(a->limit, a->used)) return nullptr;
  void* block = std::realloc(ptr, nsize);  // NOLINT(cppcoreguidelines-no-malloc)
  if (block == nullptr) return nullptr;
  a->used = a->used - old + nsize;
  return block;
}

void sandbox::abort_run(lua_State* L, abort_reason why) {
  if (abort_ == abort_reason::none) abort_ = why;
  const std::string& message = abort_ == abort_reason::time           ? time_message_
                               : abort_ == abort_reason::instructions ? instructions_message_
                                                                      : memory_message_;
  lua_pushlstring(L, message.data(), message.size());
  lua_error(L);
  std::abort();  // lua_error does not return
}

void sandbox::hook(lua_State* L, lua_Debug* ar) {
  sandbox& box = of(L);
  // Call events (profile.check_on_calls) only check; counts come from count events.
  if (ar->event == LUA_HOOKCOUNT) box.instructions_ += static_cast<std::uint64_t>(box.hook_every_);
  if (box.abort_ != abort_reason::none) {
    // Sticky: a filter that caught the first abort with pcall (or whose
    // __close handler keeps running) is stopped again.
    box.abort_run(L, box.abort_);
  }
  if (box.instructions_ > box.limits_.max_instructions) box.abort_run(L, abort_reason::instructions);
  if (std::chrono::steady_clock::now() > box.deadline_) box.abort_run(L, abort_reason::time);
}

int sandbox::protected_call(int (*fn)(lua_State*), void* arg) {
  lua_settop(L_, 0);
  lua_pushcfunction(L_, fn);  // light C function and light userdata: no allocation
  lua_pushlightuserdata(L_, arg);
  return lua_pcall(L_, 1, 0, 0);
}

std::string sandbox::error_text(int status) {
  if (status == LUA_ERRMEM && abort_ == abort_reason::none) abort_ = abort_reason::memory;
  switch (abort_) {
    case abort_reason::time:
      return time_message_;
    case abort_reason::instructions:
      return instructions_message_;
    case abort_reason::memory:
      return memory_message_;
    case abort_reason::internal:
    case abort_reason::none:
      break;
  }
  if (status != LUA_ERRRUN && status != LUA_ERRSYNTAX && status != LUA_ERRERR) {
    // A C++ exception reached Lua's own catch (...): nothing to report but
    // the fact, and the state is not trusted again.
    abort_ = abort_reason::internal;
    return profile_.name + ": internal error in the filter sandbox";
  }
  // Only reads that cannot raise: this runs outside any protected call.
  switch (lua_type(L_, -1)) {
    case LUA_TSTRING: {
      std::size_t n = 0;
      const char* s = lua_tolstring(L_, -1, &n);
      return {s, n};
    }
    case LUA_TNUMBER:
      if (lua_isinteger(L_, -1) != 0) return std::to_string(lua_tointeger(L_, -1));
      return nlohmann::json(lua_tonumber(L_, -1)).dump();
    default:
      return profile_.name + ": error object is a " + lua_typename(L_, lua_type(L_, -1)) + " value";
  }
}

namespace {

// check_pattern_cost under a lower cap than max_pattern_steps, in its words.
std::optional<std::string> check_pattern_cost_under(double cap, std::string_view function,
                                                    std::string_view pattern, std::size_t subject_bytes) {
  if (cap >= max_pattern_steps) return check_pattern_cost(function, pattern, subject_bytes);
  const double steps = pattern_worst_case(pattern, subject_bytes);
  if (steps <= cap) return std::nullopt;
  std::string shown(pattern.substr(0, 40));
  if (pattern.size() > 40) shown += "...";
  return "string." + std::string(function) + ": the pattern '" + shown + "' on " +
         std::to_string(subject_bytes) + " bytes could backtrack for about 10^" +
         std::to_string(static_cast<int>(std::log10(steps))) + " steps, more than this sandbox allows (" +
         std::to_string(static_cast<long long>(cap)) +
         "); anchor it with ^, use fewer of * + -, a shorter subject, or find with plain=true";
}

// string.find/match/gmatch/gsub with the original as upvalue 1, its name as
// upvalue 2 and the step cap as upvalue 3: refuses calls whose worst case
// would outrun the budget.
int guarded_pattern_call(lua_State* L) {
  std::size_t name_len = 0;
  const char* name = lua_tolstring(L, lua_upvalueindex(2), &name_len);
  const std::string_view function(name, name_len);
  const bool plain = function == "find" && lua_toboolean(L, 4) != 0;
  if (!plain && lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TSTRING) {
    std::size_t subject = 0, pattern = 0;
    lua_tolstring(L, 1, &subject);
    const char* p = lua_tolstring(L, 2, &pattern);
    const double cap = lua_tonumber(L, lua_upvalueindex(3));
    if (auto error = check_pattern_cost_under(cap, function, {p, pattern}, subject))
      return luaL_error(L, "%s", error->c_str());
  }
  const int args = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, args, LUA_MULTRET);
  return lua_gettop(L);
}

}  // namespace

int sandbox::setup(lua_State* L) {
  const auto* args = static_cast<const setup_args*>(lua_touserdata(L, 1));
  const std::array<luaL_Reg, 5> libs = {{{LUA_GNAME, luaopen_base},
                                         {LUA_STRLIBNAME, luaopen_string},
                                         {LUA_TABLIBNAME, luaopen_table},
                                         {LUA_MATHLIBNAME, luaopen_math},
                                         {LUA_UTF8LIBNAME, luaopen_utf8}}};
  for (const auto& lib : libs) {
    luaL_requiref(L, lib.name, lib.func, 1);
    lua_pop(L, 1);
  }

  lua_pushglobaltable(L);
  const int globals = lua_gettop(L);
  // Base functions that load code, reach the collector or write to stderr.
  for (const char* name : {"dofile", "loadfile", "load", "collectgarbage", "warn"}) {
    lua_pushnil(L);
    lua_setfield(L, globals, name);
  }
  const std::array<luaL_Reg, 6> replaced = {{{"print", &sandbox::print},
                                             {"pcall", &sandbox::pcall},
                                             {"xpcall", &sandbox::xpcall},
                                             {"setmetatable", &sandbox::setmetatable},
                                             {"read_resource", &sandbox::read_resource},
                                             {"list_resources", &sandbox::list_resources}}};
  for (const auto& fn : replaced) {
    lua_pushcfunction(L, fn.func);
    lua_setfield(L, globals, fn.name);
  }
  // string.dump would hand out bytecode; the string metatable's __index is
  // this same table, so ("").dump is covered too.
  lua_getfield(L, globals, LUA_STRLIBNAME);
  lua_pushcfunction(L, &sandbox::no_string_dump);
  lua_setfield(L, -2, "dump");
  // Pattern matching runs where the hook cannot stop it: check its cost first.
  for (const char* name : {"find", "match", "gmatch", "gsub"}) {
    lua_getfield(L, -1, name);
    lua_pushstring(L, name);
    lua_pushnumber(L, of(L).profile_.max_pattern_steps);
    lua_pushcclosure(L, &guarded_pattern_call, 3);
    lua_setfield(L, -2, name);
  }
  lua_pop(L, 1);

  // Forbidden names fail loudly, other missing globals read as nil (so
  // `count = (count or 0) + 1` works), and __metatable keeps the filter from
  // reading or replacing this metatable.
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, &sandbox::missing_global);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, globals);

  // Text only: the mode refuses bytecode even past create()'s own check.
  const int status =
      luaL_loadbufferx(L, args->source.data(), args->source.size(), of(L).chunk_name_.c_str(), "t");
  if (status != LUA_OK) {
    if (status == LUA_ERRMEM) of(L).abort_ = abort_reason::memory;
    return lua_error(L);  // the message is on top
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &chunk_key);
  return 0;
}

void sandbox::begin_event() {
  alloc_.used -= std::min(alloc_.used, print_buffer_.size());
  print_buffer_.clear();
  print_buffer_.shrink_to_fit();
  printed_ = false;
  builtin_calls_ = 0;
  instructions_ = 0;
  abort_ = abort_reason::none;
  deadline_ = std::chrono::steady_clock::now() + limits_.budget;
}

sandbox::outcome sandbox::run(const nlohmann::json& event) {
  begin_event();
  run_args args;
  args.event = &event;
  const int status = protected_call(&sandbox::run_chunk, &args);
  outcome out;
  if (status == LUA_OK) {
    out.result = std::move(args.result);
  } else {
    out.result.what = filter_result::outcome::error;
    out.result.text = error_text(status);
  }
  out.abort = abort_;
  lua_settop(L_, 0);
  return out;
}

sandbox::call_outcome sandbox::call(int (*fn)(lua_State*), void* arg) {
  begin_event();
  const int status = protected_call(fn, arg);
  call_outcome out;
  if (status != LUA_OK) {
    out.ok = false;
    out.error = error_text(status);
  }
  out.abort = abort_;
  lua_settop(L_, 0);
  return out;
}

void sandbox::push_chunk(lua_State* L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &chunk_key);
}

int sandbox::run_chunk(lua_State* L) {
  auto* args = static_cast<run_args*>(lua_touserdata(L, 1));
  sandbox& box = of(L);
  lua_settop(L, 0);
  lua_pushglobaltable(L);
  push_json(L, *args->event);
  lua_setfield(L, 1, "event");  // the globals' metatable has no __newindex: a plain set
  lua_settop(L, 0);

  lua_rawgetp(L, LUA_REGISTRYINDEX, &chunk_key);
  lua_call(L, 0, 1);

  filter_result& result = args->result;
  bool failed = false;
  std::string failure = "could not build the notice line";
  try {
    switch (lua_type(L, 1)) {
      case LUA_TNIL:
        if (box.printed_) {
          result.what = filter_result::outcome::keep;
          result.text = box.print_buffer_;
        } else {
          result.what = filter_result::outcome::drop;
        }
        break;
      case LUA_TSTRING: {
        std::size_t n = 0;
        const char* s = lua_tolstring(L, 1, &n);
        result.what = filter_result::outcome::keep;
        result.text.assign(s, n);
        break;
      }
      default:
        // to_json raises Lua errors, which this catch does not intercept.
        result.text = to_json(L, 1).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        result.what = filter_result::outcome::keep;
        break;
    }
  } catch (const std::exception& e) {
    failed = true;
    if (*e.what() != '\0') failure = e.what();
  }
  if (failed) luaL_error(L, "on_event: %s", failure.c_str());
  return 0;
}

int sandbox::missing_global(lua_State* L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char* name = lua_tostring(L, 2);
    for (const char* forbidden : forbidden_globals) {
      if (std::strcmp(name, forbidden) == 0) {
        return luaL_error(
            L, "'%s' is not available in the filter sandbox (base, string, table, math and utf8 are)", name);
      }
    }
  }
  return 0;  // nil
}

int sandbox::print(lua_State* L) {
  sandbox& box = of(L);
  const int n = lua_gettop(L);
  luaL_Buffer line;
  luaL_buffinit(L, &line);
  for (int i = 1; i <= n; ++i) {
    if (i > 1) luaL_addchar(&line, '\t');
    luaL_tolstring(L, i, nullptr);  // honours __tostring, like the stock print
    luaL_addvalue(&line);
  }
  luaL_pushresult(&line);
  std::size_t len = 0;
  const char* text = lua_tolstring(L, -1, &len);
  // The buffer lives outside the Lua heap but counts against its limit.
  const std::size_t grow = len + (box.printed_ ? 1 : 0);
  if (grow > box.alloc_.limit - std::min(box.alloc_.limit, box.alloc_.used)) {
    box.abort_run(L, abort_reason::memory);
  }
  bool out_of_memory = false;
  try {
    if (box.printed_) box.print_buffer_ += '\n';
    box.print_buffer_.append(text, len);
  } catch (const std::bad_alloc&) {
    out_of_memory = true;
  }
  if (out_of_memory) box.abort_run(L, abort_reason::memory);
  box.alloc_.used += grow;
  box.printed_ = true;
  return 0;
}

int sandbox::finish_pcall(lua_State* L, int status, int extra) {
  if (status == LUA_OK) return lua_gettop(L) - extra;
  sandbox& box = of(L);
  if (status == LUA_ERRMEM && box.abort_ == abort_reason::none) box.abort_ = abort_reason::memory;
  // Budget and memory aborts are not the filter's to catch: pass them on.
  if (box.abort_ != abort_reason::none) return lua_error(L);
  lua_pushboolean(L, 0);
  lua_pushvalue(L, -2);
  return 2;
}

// The stock pcall, minus yields (there are no coroutines), plus finish_pcall.
int sandbox::pcall(lua_State* L) {
  luaL_checkany(L, 1);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  const int status = lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0);
  return finish_pcall(L, status, 0);
}

// The stock xpcall, likewise, with the message handler behind
// guarded_handler.
int sandbox::xpcall(lua_State* L) {
  const int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, &sandbox::guarded_handler, 1);
  lua_replace(L, 2);
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2);
  const int status = lua_pcall(L, n - 2, LUA_MULTRET, 2);
  return finish_pcall(L, status, 2);
}

// An error raised by the hook is still inside the hook, where Lua has
// switched hooks off; a message handler called for it would run unbounded
// (`xpcall(f, function() while true do end end)`). So once the run is being
// aborted the filter's handler is skipped and the error passes on as is.
int sandbox::guarded_handler(lua_State* L) {
  if (of(L).abort_ != abort_reason::none) return 1;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

// The stock setmetatable, refusing __gc: Lua 5.4 runs finalizers with hooks
// off, so a looping __gc would escape the budget (at a later event or while
// the state closes). Lua marks a table for finalization only if __gc is
// present when setmetatable is called, so adding it later does nothing.
int sandbox::setmetatable(lua_State* L) {
  const int t = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (t == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    const bool has_gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (has_gc) return luaL_error(L, "__gc metamethods are not available in the filter sandbox");
  }
  if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL) {
    return luaL_error(L, "cannot change a protected metatable");
  }
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

int sandbox::no_string_dump(lua_State* L) {
  return luaL_error(L, "string.dump is not available in the filter sandbox");
}

void sandbox::count_builtin_call(lua_State* L) {
  if (reader_ == nullptr) luaL_error(L, "no resources are available to this filter");
  if (++builtin_calls_ > limits_.max_builtin_calls) {
    lua_pushfstring(L, "on_event: more than %d read_resource/list_resources calls in one event",
                    limits_.max_builtin_calls);
    lua_error(L);
  }
}

int sandbox::read_resource(lua_State* L) {
  sandbox& box = of(L);
  std::size_t len = 0;
  const char* uri = luaL_checklstring(L, 1, &len);
  box.count_builtin_call(L);
  resource_reader::read_result read;
  bool failed = false;
  // No Lua call inside: catch (...) cannot swallow a Lua error here.
  try {
    read = box.reader_->read_resource(std::string(uri, len));
    failed = !read.error.empty();
  } catch (const std::exception& e) {
    failed = true;
    read.error = e.what();
  } catch (...) {
    failed = true;
  }
  if (failed) {
    return luaL_error(L, "read_resource: %s", read.error.empty() ? "unknown error" : read.error.c_str());
  }
  push_json(L, read.value);
  return 1;
}

int sandbox::list_resources(lua_State* L) {
  sandbox& box = of(L);
  box.count_builtin_call(L);
  nlohmann::json list;
  bool failed = false;
  std::string failure = "unknown error";
  // No Lua call inside: catch (...) cannot swallow a Lua error here.
  try {
    list = box.reader_->list_resources();
  } catch (const std::exception& e) {
    failed = true;
    if (*e.what() != '\0') failure = e.what();
  } catch (...) {
    failed = true;
  }
  if (failed) return luaL_error(L, "list_resources: %s", failure.c_str());
  push_json(L, list);
  return 1;
}

}  // namespace tidings::filters
