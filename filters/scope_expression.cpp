#include "filters/scope_expression.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <lua.hpp>

#include "filters/lua_json.hpp"
#include "filters/sandbox.hpp"

// How the sandbox (filters/sandbox.hpp) is used here. The expression is
// compiled once as the chunk
//     local subscriber <const>, event <const> = ...; return <expression>
// so `subscriber` and `event` are its parameters, not globals. Its _ENV
// upvalue is an empty table E whose metatable sends reads to a table T of the
// allowed names; T itself is out of the expression's reach (E's metatable is
// protected), the library tables in T are read-only proxies, and rawset and
// _G are left out. So the only state an evaluation can change is E, and
// before each evaluation E is replaced if it holds anything. The common case
// costs one lua_next on an empty table and no allocation.
//
// `subscriber` and `event` are new tables each evaluation, so nothing the
// expression does to them outlives it. To keep that cheap, subscriber starts
// with principal_id only; its __index (subscriber_field) builds roles,
// groups, scopes or attributes when the expression first reads them, from the
// scope_subject whose address the evaluation put in the registry. That
// address is only read while admits() runs: a subscriber table cannot reach a
// later evaluation, since E is its only way out and E is replaced before the
// expression runs.
//
// Global names are checked at compile time against the compiled bytecode
// (lua_dump): every read of a global is a GETTABUP on the _ENV upvalue with a
// constant name. Accesses that cannot be checked that way (using _ENV as a
// value, which also covers names longer than 40 bytes and functions with
// more than 255 constants) are refused.

namespace tidings::filters {
namespace {

static_assert(LUA_VERSION_NUM == 504, "the bytecode scan below reads Lua 5.4's dump format");

constexpr std::string_view chunk_prefix = "local subscriber <const>, event <const> = ...; return ";

// Base functions the expression does not get, on top of those the sandbox
// already removes: output, raw writes (they would bypass the read-only
// library proxies), the real globals table and the filter built-ins.
constexpr std::array<std::string_view, 5> left_out = {"_G", "print", "rawset", "read_resource",
                                                      "list_resources"};
// Names an author might reach for that are not there; they get "not
// available" rather than "unknown".
constexpr std::array<std::string_view, 11> sandbox_forbidden = {
    "os",         "io",     "debug",    "package",   "require",       "load",
    "loadstring", "dofile", "loadfile", "coroutine", "collectgarbage"};

constexpr std::string_view available =
    " (a scope expression can use subscriber, event, has, has_any, has_all, starts_with, Lua's base "
    "functions and the string, table, math and utf8 libraries)";

// Registry keys (their addresses).
const char env_key = 0;              // E, the current evaluation's globals
const char env_meta_key = 0;         // E's metatable: {__index = T, __metatable = false}
const char subject_key = 0;          // light userdata: the scope_subject being evaluated
const char subscriber_meta_key = 0;  // {__index = subscriber_field, __metatable = false}

// About 10^9 pattern steps take a second (pattern_cost.hpp), so 10^6 per
// millisecond of budget.
constexpr double pattern_steps_per_ms = 1e6;

// The list helpers, in Lua so that the instruction budget covers their loops.
// Error level 3 (check) and 2 point at the expression's own line.
constexpr std::string_view helpers_source = R"lua(
local type, error, select, sub = ...
local _ENV = nil
local function check(list, name)
  local t = type(list)
  if t == "table" then return true end
  if t == "nil" then return false end
  error("bad argument #1 to '" .. name .. "' (table expected, got " .. t .. ")", 3)
end
local function contains(list, value)
  for i = 1, #list do
    if list[i] == value then return true end
  end
  return false
end
local function has(list, value)
  return check(list, "has") and contains(list, value)
end
local function count(name, ...)
  local n = select("#", ...)
  if n == 0 then error(name .. ": give at least one value to look for", 3) end
  return n
end
local function has_any(list, ...)
  local n = count("has_any", ...)
  if not check(list, "has_any") then return false end
  for i = 1, n do
    if contains(list, (select(i, ...))) then return true end
  end
  return false
end
local function has_all(list, ...)
  local n = count("has_all", ...)
  if not check(list, "has_all") then return false end
  for i = 1, n do
    if not contains(list, (select(i, ...))) then return false end
  end
  return true
end
local function starts_with(s, prefix)
  if type(prefix) ~= "string" then
    error("bad argument #2 to 'starts_with' (string expected, got " .. type(prefix) .. ")", 2)
  end
  local t = type(s)
  if t == "nil" then return false end
  if t ~= "string" then error("bad argument #1 to 'starts_with' (string expected, got " .. t .. ")", 2) end
  return sub(s, 1, #prefix) == prefix
end
return has, has_any, has_all, starts_with
)lua";
constexpr std::array<const char*, 4> helper_names = {"has", "has_any", "has_all", "starts_with"};

// ---------------------------------------------------------------------------
// The bytecode scan.

// Lua 5.4 opcodes (lopcodes.h, the same through 5.4.0-5.4.8) and iABC fields.
constexpr unsigned op_getupval = 9;
constexpr unsigned op_setupval = 10;
constexpr unsigned op_gettabup = 11;
constexpr unsigned op_settabup = 15;
unsigned opcode(std::uint32_t i) {
  return i & 0x7fu;
}
unsigned arg_a(std::uint32_t i) {
  return (i >> 7) & 0xffu;
}
unsigned arg_b(std::uint32_t i) {
  return (i >> 16) & 0xffu;
}
unsigned arg_c(std::uint32_t i) {
  return (i >> 24) & 0xffu;
}

struct global_uses {
  std::vector<std::string_view> reads;   // in code order, into the dump
  std::vector<std::string_view> writes;  // likewise
  bool env_as_value = false;             // _ENV itself read or assigned
};

// Reads ldump.c's format; `failed` sticks at the first thing out of place.
struct dump_reader {
  std::string_view data;
  std::size_t pos = 0;
  bool failed = false;

  std::uint8_t byte() {
    if (pos >= data.size()) {
      failed = true;
      return 0;
    }
    return static_cast<std::uint8_t>(data[pos++]);
  }
  void skip(std::size_t n) {
    if (n > data.size() - pos) failed = true;
    pos = failed ? data.size() : pos + n;
  }
  // dumpSize: 7 bits a byte, most significant first, the last byte marked.
  std::size_t size() {
    std::size_t x = 0;
    for (int i = 0; i < 10 && !failed; ++i) {
      const std::uint8_t b = byte();
      x = (x << 7) | (b & 0x7fu);
      if ((b & 0x80u) != 0) return x;
    }
    failed = true;
    return 0;
  }
  // A count of items each at least `item_bytes` long; fails if they cannot fit.
  std::size_t count(std::size_t item_bytes) {
    const std::size_t n = size();
    if (n > (data.size() - pos) / item_bytes) failed = true;
    return failed ? 0 : n;
  }
  std::optional<std::string_view> string() {
    std::size_t n = size();
    if (failed || n == 0) return std::nullopt;  // 0: no string
    --n;
    if (n > data.size() - pos) {
      failed = true;
      return std::nullopt;
    }
    const std::string_view s = data.substr(pos, n);
    pos += n;
    return s;
  }
};

// One function prototype and its nested ones. `parent_env` says which of the
// enclosing function's upvalues hold the chunk's _ENV (null for the main
// function, whose only upvalue is _ENV).
void scan_function(dump_reader& r, const std::vector<bool>* parent_env, global_uses& uses) {
  r.string();  // source
  r.size();    // linedefined
  r.size();    // lastlinedefined
  r.skip(3);   // numparams, is_vararg, maxstacksize
  std::vector<std::uint32_t> code(r.count(sizeof(std::uint32_t)));
  for (std::uint32_t& i : code) {
    if (r.failed) return;
    std::memcpy(&i, r.data.data() + r.pos, sizeof i);  // dumped in native order
    r.pos += sizeof i;
  }

  std::vector<std::optional<std::string_view>> constants(r.count(1));
  for (auto& k : constants) {
    switch (r.byte()) {
      case 0:   // nil
      case 1:   // false
      case 17:  // true
        break;
      case 3:  // integer
        r.skip(sizeof(lua_Integer));
        break;
      case 19:  // float
        r.skip(sizeof(lua_Number));
        break;
      case 4:   // short string
      case 20:  // long string
        k = r.string();
        break;
      default:
        r.failed = true;
    }
    if (r.failed) return;
  }

  std::vector<bool> env(r.count(3));
  for (std::size_t u = 0; u < env.size(); ++u) {
    const bool in_stack = r.byte() != 0;
    const std::uint8_t index = r.byte();
    r.byte();  // kind
    if (parent_env == nullptr) {
      env[u] = u == 0;
    } else {
      env[u] = !in_stack && index < parent_env->size() && (*parent_env)[index];
    }
  }
  if (r.failed || (parent_env == nullptr && env.size() != 1)) {
    r.failed = true;
    return;
  }

  const auto is_env = [&](unsigned upvalue) {
    if (upvalue >= env.size()) r.failed = true;
    return !r.failed && env[upvalue];
  };
  const auto name = [&](unsigned k) -> std::string_view {
    if (k >= constants.size() || !constants[k]) {
      r.failed = true;
      return {};
    }
    return *constants[k];
  };
  for (const std::uint32_t i : code) {
    switch (opcode(i)) {
      case op_gettabup:  // R[A] := UpValue[B][K[C]]
        if (is_env(arg_b(i))) uses.reads.push_back(name(arg_c(i)));
        break;
      case op_settabup:  // UpValue[A][K[B]] := RK(C)
        if (is_env(arg_a(i))) uses.writes.push_back(name(arg_b(i)));
        break;
      case op_getupval:  // R[A] := UpValue[B]
      case op_setupval:  // UpValue[B] := R[A]
        if (is_env(arg_b(i))) uses.env_as_value = true;
        break;
      default:
        break;
    }
    if (r.failed) return;
  }

  const std::size_t protos = r.count(1);
  for (std::size_t p = 0; p < protos && !r.failed; ++p) scan_function(r, &env, uses);

  // Debug information (empty in a stripped dump, read anyway).
  r.skip(r.count(1));  // lineinfo
  for (std::size_t n = r.count(2), j = 0; j < n && !r.failed; ++j) {
    r.size();  // abslineinfo pc, line
    r.size();
  }
  for (std::size_t n = r.count(3), j = 0; j < n && !r.failed; ++j) {
    r.string();  // locvar name, startpc, endpc
    r.size();
    r.size();
  }
  for (std::size_t n = r.count(1), j = 0; j < n && !r.failed; ++j) r.string();  // upvalue names
}

// nullopt when the dump is not in the format this code knows.
std::optional<global_uses> scan_globals(std::string_view dump) {
  dump_reader r{dump};
  constexpr std::string_view signature = LUA_SIGNATURE;
  if (dump.substr(0, signature.size()) != signature) return std::nullopt;
  r.skip(signature.size());
  const std::uint8_t version = r.byte();
  const std::uint8_t format = r.byte();
  r.skip(6);  // LUAC_DATA
  const std::uint8_t instruction_size = r.byte();
  const std::uint8_t integer_size = r.byte();
  const std::uint8_t number_size = r.byte();
  if (version != 0x54 || format != 0 || instruction_size != sizeof(std::uint32_t) ||
      integer_size != sizeof(lua_Integer) || number_size != sizeof(lua_Number)) {
    return std::nullopt;
  }
  r.skip(sizeof(lua_Integer) + sizeof(lua_Number));  // LUAC_INT, LUAC_NUM
  r.byte();                                          // the main function's upvalue count
  global_uses uses;
  scan_function(r, nullptr, uses);
  if (r.failed || r.pos != dump.size()) return std::nullopt;
  return uses;
}

int append_dump(lua_State* /*L*/, const void* p, std::size_t n, void* ud) {
  try {
    static_cast<std::string*>(ud)->append(static_cast<const char*>(p), n);
    return 0;
  } catch (const std::exception&) {
    return 1;
  }
}

// ---------------------------------------------------------------------------
// Setting up the state (under sandbox::call).

struct prepare_args {
  std::string error;  // a compile error in the expression (not a Lua error)
};

int refuse_write(lua_State* L) {
  return luaL_error(L, "'%s' is read-only in a scope expression", lua_tostring(L, lua_upvalueindex(1)));
}

// Pushes an empty table that reads through to the table at `lib` and refuses
// writes; its metatable is protected.
void push_read_only(lua_State* L, int lib, const char* name) {
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, lib);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, name);
  lua_pushcclosure(L, &refuse_write, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
}

// Pushes a fresh, empty E and makes it the registry's.
void push_new_env(lua_State* L) {
  lua_createtable(L, 0, 0);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &env_meta_key);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &env_key);
}

bool is_one_of(const auto& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// subscriber's __index: builds a list or the attributes on first use.
int subscriber_field(lua_State* L);

int prepare(lua_State* L) {
  auto* args = static_cast<prepare_args*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  lua_pushglobaltable(L);     // 1: the sandbox's globals
  lua_createtable(L, 0, 40);  // 2: T, the names the expression may read
  const int globals = 1;
  const int allowed = 2;

  // The helpers first: they are the only Lua code run here, so the budget's
  // clock (started by sandbox::call) is checked while it has barely begun.
  if (luaL_loadbufferx(L, helpers_source.data(), helpers_source.size(), "=scope helpers", "t") != LUA_OK) {
    return lua_error(L);
  }
  for (const char* name : {"type", "error", "select"}) lua_getfield(L, globals, name);
  lua_getfield(L, globals, "string");
  lua_getfield(L, -1, "sub");
  lua_remove(L, -2);
  lua_call(L, 4, static_cast<int>(helper_names.size()));
  for (auto it = helper_names.rbegin(); it != helper_names.rend(); ++it) lua_setfield(L, allowed, *it);

  lua_pushnil(L);
  while (lua_next(L, globals) != 0) {  // raw: the globals' __index is not involved
    std::size_t len = 0;
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : nullptr;
    if (key == nullptr || is_one_of(left_out, std::string_view(key, len))) {
      lua_pop(L, 1);
      continue;
    }
    if (lua_type(L, -1) == LUA_TTABLE) {
      push_read_only(L, lua_gettop(L), key);
      lua_remove(L, -2);
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, allowed);
  }

  // E's metatable, and the first E as the chunk's _ENV.
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, allowed);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &env_meta_key);
  sandbox::push_chunk(L);
  push_new_env(L);
  lua_setupvalue(L, -2, 1);
  lua_pop(L, 1);

  // subscriber's metatable.
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, &subscriber_field);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &subscriber_meta_key);

  // getmetatable("").__index would be the writable string table.
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1) != 0) {
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);

  // The names the expression reads, from its bytecode.
  bool failed = false;
  std::string failure = "scope: internal error while checking the expression's names";
  try {
    std::string dump;
    sandbox::push_chunk(L);
    const int status = lua_dump(L, &append_dump, &dump, 1);
    lua_pop(L, 1);
    const std::optional<global_uses> uses = status == 0 ? scan_globals(dump) : std::nullopt;
    if (!uses) {
      failed = true;
    } else if (uses->env_as_value) {
      args->error =
          "scope: the expression uses _ENV directly (or a global name longer than 40 bytes, or more than "
          "255 constants in one function), which cannot be checked; name globals plainly";
    } else {
      for (const std::string_view name : uses->reads) {
        lua_pushlstring(L, name.data(), name.size());
        const bool known = lua_rawget(L, allowed) != LUA_TNIL;
        lua_pop(L, 1);
        if (known || is_one_of(uses->writes, name)) continue;
        const bool forbidden = is_one_of(sandbox_forbidden, name) || is_one_of(left_out, name);
        args->error = "scope: '" + std::string(name) + "' is " +
                      (forbidden ? "not available in a scope expression" : "not defined") +
                      std::string(available);
        break;
      }
    }
  } catch (const std::exception& e) {
    failed = true;
    if (*e.what() != '\0') failure = std::string("scope: ") + e.what();
  }
  if (failed) luaL_error(L, "%s", failure.c_str());
  return 0;
}

// ---------------------------------------------------------------------------
// One evaluation (under sandbox::call).

struct evaluate_args {
  const scope_subject* subscriber = nullptr;
  const scope_event* event = nullptr;
  bool admitted = false;
};

void push_list(lua_State* L, const std::vector<std::string>& list) {
  lua_createtable(L, static_cast<int>(std::min<std::size_t>(list.size(), 1u << 20)), 0);
  lua_Integer i = 1;
  for (const std::string& item : list) {
    lua_pushlstring(L, item.data(), item.size());
    lua_rawseti(L, -2, i++);
  }
}

void push_string(lua_State* L, std::string_view s) {
  lua_pushlstring(L, s.data(), s.size());
}

int subscriber_field(lua_State* L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &subject_key);
  const auto* s = static_cast<const scope_subject*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (s == nullptr || lua_type(L, 2) != LUA_TSTRING) return 0;
  std::size_t len = 0;
  const char* k = lua_tolstring(L, 2, &len);
  const std::string_view key(k, len);
  if (key == "roles") {
    push_list(L, s->roles);
  } else if (key == "groups") {
    push_list(L, s->groups);
  } else if (key == "scopes") {
    push_list(L, s->scopes);
  } else if (key == "attributes") {
    if (s->attributes.is_null()) {
      lua_createtable(L, 0, 0);
    } else {
      push_json(L, s->attributes);  // raises past max_json_depth
    }
  } else {
    return 0;
  }
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);
  lua_rawset(L, 1);
  return 1;
}

int evaluate(lua_State* L) {
  auto* args = static_cast<evaluate_args*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  sandbox::push_chunk(L);  // 1

  // The last evaluation's E, unless it assigned a global (or failed after).
  lua_rawgetp(L, LUA_REGISTRYINDEX, &env_key);
  lua_pushnil(L);
  if (lua_next(L, -2) != 0) {
    lua_pop(L, 3);
    push_new_env(L);
  }
  lua_setupvalue(L, 1, 1);

  // subscriber: principal_id now, the rest on first use (subscriber_field).
  lua_pushlightuserdata(L, const_cast<scope_subject*>(args->subscriber));
  lua_rawsetp(L, LUA_REGISTRYINDEX, &subject_key);
  lua_createtable(L, 0, 5);  // 2
  push_string(L, args->subscriber->principal_id);
  lua_setfield(L, -2, "principal_id");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &subscriber_meta_key);
  lua_setmetatable(L, -2);

  const scope_event& e = *args->event;
  lua_createtable(L, 0, 3);  // 3
  push_string(L, e.stream);
  lua_setfield(L, -2, "stream");
  push_string(L, e.path);
  lua_setfield(L, -2, "path");
  push_string(L, e.type);
  lua_setfield(L, -2, "type");

  lua_call(L, 2, LUA_MULTRET);
  const int results = lua_gettop(L);
  if (results == 1 && lua_type(L, 1) == LUA_TBOOLEAN) {
    args->admitted = lua_toboolean(L, 1) != 0;
    return 0;
  }
  if (results == 1) {
    lua_pushfstring(L, "scope: the expression gave a %s, not a boolean (true delivers, false denies)",
                    luaL_typename(L, 1));
  } else {
    lua_pushfstring(L, "scope: the expression gave %d values, not one boolean (true delivers, false denies)",
                    results);
  }
  return lua_error(L);
}

filter_limits sandbox_limits(const scope_limits& limits) {
  filter_limits out;
  out.budget = limits.budget;
  out.max_instructions = limits.max_instructions;
  out.max_memory_bytes = limits.max_memory_bytes;
  out.max_builtin_calls = 0;  // no resource reader
  return out;
}

}  // namespace

scope_expression::scope_expression(std::string source, const scope_limits& limits)
    : source_(std::move(source)), limits_(limits) {}

scope_expression::~scope_expression() = default;

std::unique_ptr<scope_expression> scope_expression::compile(const std::string& expression,
                                                            const scope_limits& limits, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  const std::size_t start = expression.find_first_not_of(" \t\r\n\f\v");
  if (start == std::string::npos) {
    *error = "scope: the expression is empty";
    return nullptr;
  }
  if (expression[start] == LUA_SIGNATURE[0]) {
    *error = "scope: precompiled Lua bytecode is not accepted; a scope expression must be Lua source text";
    return nullptr;
  }
  std::unique_ptr<scope_expression> compiled(
      new scope_expression(std::string(chunk_prefix) + expression, limits));
  compiled->box_ = compiled->build(error);
  if (!compiled->box_) return nullptr;
  return compiled;
}

std::unique_ptr<sandbox> scope_expression::build(std::string* error) const {
  sandbox_profile profile;
  profile.name = "scope";
  profile.max_pattern_steps =
      std::max(1.0, static_cast<double>(limits_.budget.count())) * pattern_steps_per_ms;
  // A budget of milliseconds on a shared thread: check it often, and after
  // every C function, so that one evaluation overruns it by at most one C
  // call's work (bounded by the memory limit).
  profile.hook_interval = 100;
  profile.check_on_calls = true;
  auto box = sandbox::create(source_, sandbox_limits(limits_), nullptr, error, profile);
  if (!box) return nullptr;
  prepare_args args;
  sandbox::call_outcome out = box->call(&prepare, &args);
  if (!out.ok) {
    *error = std::move(out.error);
    return nullptr;
  }
  if (!args.error.empty()) {
    *error = std::move(args.error);
    return nullptr;
  }
  return box;
}

bool scope_expression::admits(const scope_subject& subscriber, const scope_event& event) {
  last_error_.clear();
  if (!box_) {
    box_ = build(&last_error_);
    if (!box_) return false;
  }
  evaluate_args args;
  args.subscriber = &subscriber;
  args.event = &event;
  sandbox::call_outcome out = box_->call(&evaluate, &args);
  if (out.ok) return args.admitted;
  last_error_ = std::move(out.error);
  // Every message starts `scope`: lua_json's are written for filters, and an
  // error raised in a function the expression tail-calls has no position.
  constexpr std::string_view filter_prefix = "on_event: ";
  constexpr std::string_view prefix = "scope";
  if (last_error_.compare(0, filter_prefix.size(), filter_prefix) == 0) {
    last_error_.replace(0, filter_prefix.size(), "scope: ");
  } else if (last_error_.compare(0, prefix.size(), prefix) != 0) {
    last_error_.insert(0, "scope: ");
  }
  // A runaway evaluation may have left the state at its memory cap.
  if (out.abort != abort_reason::none) box_.reset();
  return false;
}

const std::string& scope_expression::last_error() const {
  return last_error_;
}

std::size_t scope_expression::memory_used() const {
  return box_ ? box_->memory_used() : 0;
}

}  // namespace tidings::filters
