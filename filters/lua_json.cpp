#include "filters/lua_json.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <lua.hpp>

namespace tidings::filters {
namespace {

void push_value(lua_State* L, const nlohmann::json& value, int depth) {
  // Every level holds the table and a key or value on the Lua stack.
  luaL_checkstack(L, 3, "JSON nests too deeply");
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      lua_pushnil(L);
      return;
    case nlohmann::json::value_t::boolean:
      lua_pushboolean(L, value.get<bool>() ? 1 : 0);
      return;
    case nlohmann::json::value_t::number_integer:
      lua_pushinteger(L, static_cast<lua_Integer>(value.get<std::int64_t>()));
      return;
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = value.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<lua_Integer>::max())) {
        lua_pushinteger(L, static_cast<lua_Integer>(u));
      } else {
        lua_pushnumber(L, static_cast<lua_Number>(u));
      }
      return;
    }
    case nlohmann::json::value_t::number_float:
      lua_pushnumber(L, value.get<double>());
      return;
    case nlohmann::json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      return;
    }
    case nlohmann::json::value_t::binary: {
      const auto& b = value.get_binary();
      lua_pushlstring(L, reinterpret_cast<const char*>(b.data()), b.size());
      return;
    }
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
      break;
  }
  if (depth > max_json_depth) {
    lua_pushfstring(L, "on_event: JSON nests deeper than %d levels", max_json_depth);
    lua_error(L);
  }
  if (value.is_array()) {
    lua_createtable(L, static_cast<int>(std::min<std::size_t>(value.size(), 1u << 20)), 0);
    lua_Integer i = 1;
    for (const auto& element : value) {
      push_value(L, element, depth + 1);
      lua_rawseti(L, -2, i++);
    }
    return;
  }
  lua_createtable(L, 0, static_cast<int>(std::min<std::size_t>(value.size(), 1u << 20)));
  for (const auto& [key, element] : value.items()) {
    lua_pushlstring(L, key.data(), key.size());
    push_value(L, element, depth + 1);
    lua_rawset(L, -3);
  }
}

[[noreturn]] void raise(lua_State* L, const char* what) {
  lua_pushfstring(L, "on_event: cannot encode %s as JSON", what);
  lua_error(L);
  // lua_error never returns; this keeps [[noreturn]] honest for the compiler.
  std::abort();
}

// Lua's own rendering of a number key (LUA_NUMBER_FMT), done here because
// lua_tolstring would turn the key into a string in place and break lua_next.
std::string number_key(lua_State* L, int index) {
  if (lua_isinteger(L, index) != 0) return std::to_string(lua_tointeger(L, index));
  std::array<char, 64> buf{};
  const int n = std::snprintf(buf.data(), buf.size(), LUA_NUMBER_FMT,
                              static_cast<LUAI_UACNUMBER>(lua_tonumber(L, index)));
  return std::string(buf.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
}

class encoder {
 public:
  explicit encoder(lua_State* L) : L_(L) {}

  nlohmann::json encode(int index, int depth) {
    index = lua_absindex(L_, index);
    // The Lua heap is capped, but one string referenced a thousand times is
    // cheap there and a thousand copies here: bound what the JSON may hold.
    spend(16);
    switch (lua_type(L_, index)) {
      case LUA_TNIL:
      case LUA_TNONE:
        return nullptr;
      case LUA_TBOOLEAN:
        return lua_toboolean(L_, index) != 0;
      case LUA_TNUMBER:
        return encode_number(index);
      case LUA_TSTRING: {
        std::size_t n = 0;
        const char* s = lua_tolstring(L_, index, &n);
        spend(n);
        return std::string(s, n);
      }
      case LUA_TTABLE:
        return encode_table(index, depth);
      default:
        raise(L_, lua_pushfstring(L_, "a %s", luaL_typename(L_, index)));
    }
  }

 private:
  nlohmann::json encode_number(int index) {
    if (lua_isinteger(L_, index) != 0) return static_cast<std::int64_t>(lua_tointeger(L_, index));
    const double d = lua_tonumber(L_, index);
    if (std::isnan(d)) raise(L_, "nan");
    if (std::isinf(d)) raise(L_, d > 0 ? "inf" : "-inf");
    return d;
  }

  nlohmann::json encode_table(int index, int depth) {
    if (depth > max_json_depth) {
      raise(L_, lua_pushfstring(L_, "a table nested deeper than %d levels", max_json_depth));
    }
    const void* self = lua_topointer(L_, index);
    for (const void* open : path_) {
      if (open == self) raise(L_, "a table that contains itself");
    }
    luaL_checkstack(L_, 3, "table nests too deeply");
    path_.push_back(self);

    // First pass: is it a sequence 1..n? Keys are distinct, so all-integer
    // keys within [1, count] with max == count means exactly 1..n.
    lua_Integer count = 0;
    lua_Integer max_key = 0;
    bool sequence = true;
    lua_pushnil(L_);
    while (lua_next(L_, index) != 0) {
      lua_pop(L_, 1);
      ++count;
      if (sequence && lua_isinteger(L_, -1) != 0) {
        const lua_Integer k = lua_tointeger(L_, -1);
        if (k < 1) sequence = false;
        max_key = std::max(max_key, k);
      } else {
        sequence = false;
      }
    }
    sequence = sequence && count > 0 && max_key == count;

    nlohmann::json out = sequence ? nlohmann::json::array() : nlohmann::json::object();
    if (sequence) {
      for (lua_Integer i = 1; i <= count; ++i) {
        lua_rawgeti(L_, index, i);
        out.push_back(encode(-1, depth + 1));
        lua_pop(L_, 1);
      }
    } else {
      lua_pushnil(L_);
      while (lua_next(L_, index) != 0) {
        std::string key;
        switch (lua_type(L_, -2)) {
          case LUA_TSTRING: {
            std::size_t n = 0;
            const char* s = lua_tolstring(L_, -2, &n);
            key.assign(s, n);
            spend(n);
            break;
          }
          case LUA_TNUMBER:
            key = number_key(L_, -2);
            break;
          default:
            raise(L_, lua_pushfstring(L_, "a table key of type %s", luaL_typename(L_, -2)));
        }
        out[key] = encode(-1, depth + 1);
        lua_pop(L_, 1);
      }
    }
    path_.pop_back();
    return out;
  }

  void spend(std::size_t bytes) {
    if (bytes > budget_) {
      lua_pushfstring(L_, "on_event: the returned value is larger than %d KiB as JSON",
                      static_cast<int>(max_json_bytes >> 10));
      lua_error(L_);
    }
    budget_ -= bytes;
  }

  lua_State* L_;
  std::size_t budget_ = max_json_bytes;
  std::vector<const void*> path_;  // tables being encoded, outermost first
};

}  // namespace

void push_json(lua_State* L, const nlohmann::json& value) {
  push_value(L, value, 1);
}

nlohmann::json to_json(lua_State* L, int index) {
  return encoder(L).encode(index, 1);
}

}  // namespace tidings::filters
