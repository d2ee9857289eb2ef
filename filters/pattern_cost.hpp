#pragma once

// Lua's pattern matching (string.find, match, gmatch, gsub) runs in C, where
// the sandbox's instruction hook never fires, and it backtracks: each `*`,
// `+` or `-` item can retry every position, so a pattern with k of them can
// take on the order of n^k steps on a subject of n bytes (n^(k+1) when the
// pattern is not anchored and every start position is tried). The sandbox
// refuses a call whose worst case is beyond a fixed number of steps instead
// of letting it run past the filter's budget. Pure; no Lua.

#include <optional>
#include <string>
#include <string_view>

namespace tidings::filters {

// About a second of matching on these machines, in the worst case.
inline constexpr double max_pattern_steps = 1e9;

// The worst-case step count of matching `pattern` against `subject_bytes`.
double pattern_worst_case(std::string_view pattern, std::size_t subject_bytes);

// An error message when the call may run too long; nullopt when it is fine.
std::optional<std::string> check_pattern_cost(std::string_view function, std::string_view pattern,
                                              std::size_t subject_bytes);

}  // namespace tidings::filters
