#pragma once

// Structured NDJSON log lines on stderr: {"ts":..,"level":..,"event":"watch.started",...}.
// One line per lifecycle event; never a token or a payload.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tidings::logging {

enum class level { debug, info, warn, error };

// A field value: text, integer or boolean.
using value = std::variant<std::string_view, std::int64_t, std::uint64_t, bool>;
using field = std::pair<std::string_view, value>;

// Lines below this level are dropped (info by default; --verbose: debug).
void set_min_level(level l);
bool enabled(level l);

// Writes one line atomically (one write(2) call).
void write(level l, std::string_view event, std::initializer_list<field> fields = {});

inline void debug(std::string_view e, std::initializer_list<field> f = {}) {
  write(level::debug, e, f);
}
inline void info(std::string_view e, std::initializer_list<field> f = {}) {
  write(level::info, e, f);
}
inline void warn(std::string_view e, std::initializer_list<field> f = {}) {
  write(level::warn, e, f);
}
inline void error(std::string_view e, std::initializer_list<field> f = {}) {
  write(level::error, e, f);
}

}  // namespace tidings::logging
