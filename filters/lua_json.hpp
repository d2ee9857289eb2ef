#pragma once

// JSON <-> Lua values for the filter sandbox. Both functions raise Lua errors
// (C++ exceptions in lua5.4-c++), so they must run under lua_pcall.

#include <cstddef>

#include <nlohmann/json.hpp>

struct lua_State;

namespace tidings::filters {

// Deepest nesting either direction accepts (the outermost array, object or
// table is level 1).
inline constexpr int max_json_depth = 100;
// Largest value to_json builds (string bytes plus a little per value); a
// notice line is cut to a few KiB anyway.
inline constexpr std::size_t max_json_bytes = 1 << 20;

// Pushes `value`: objects become tables keyed by string, arrays 1-based
// sequences, null nil (so a null inside an array leaves a hole), integers Lua
// integers (unsigned ones past int64 become floats), other numbers floats.
// Raises `on_event: JSON nests deeper than 100 levels` past max_json_depth.
void push_json(lua_State* L, const nlohmann::json& value);

// The value at `index` as JSON: a table whose keys are exactly 1..n is an
// array, any other table (including the empty one) an object whose integer
// and float keys are written as Lua prints them; strings, booleans and finite
// numbers as themselves, nil as null. Raises `on_event: cannot encode ... as
// JSON` for nan/inf, functions, userdata, threads, boolean or table keys,
// cycles, tables nested deeper than max_json_depth, and values larger than
// max_json_bytes. Reads tables raw:
// metamethods are ignored.
nlohmann::json to_json(lua_State* L, int index);

}  // namespace tidings::filters
