#pragma once

// Structured NDJSON log lines on stderr: {"ts":..,"level":..,"event":"watch.started",...}.
// One line per lifecycle event; never a token or a payload.
//
// One logger per subsystem: the prefix of an event name before its first
// dot is the name of the subsystem's logger ("source.failed" is logged by
// "source", "mcp.server.started" by "mcp"). A level spec sets the minimum
// level for all of them and, optionally, per logger:
// "info,source=debug,webhook=warn" (the `log-level` setting).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tidings::logging {

enum class level { debug, info, warn, error };

std::string_view level_name(level l);  // "debug", "info", "warn", "error"

// A field value: text, integer or boolean.
using value = std::variant<std::string_view, std::int64_t, std::uint64_t, bool>;
using field = std::pair<std::string_view, value>;

// The subsystems that log today, i.e. the event prefixes a level spec may
// name. Add one here when its first event is logged.
std::span<const std::string_view> subsystems();

// The minimum level for every line, and per subsystem where it differs.
struct level_spec {
  level base = level::info;
  std::vector<std::pair<std::string, level>> overrides;  // subsystem, level; each at most once

  bool operator==(const level_spec&) const = default;
};

// Parses "LEVEL[,SUBSYSTEM=LEVEL]..." (e.g. "info,source=debug"); on an
// error returns what is wrong and leaves *out unchanged.
std::optional<std::string> parse_level_spec(std::string_view text, level_spec* out);
// The spec's text as parse_level_spec reads it back.
std::string to_string(const level_spec& spec);

// The subsystem (logger name) of an event: its prefix before the first dot.
std::string_view subsystem_of(std::string_view event);

// Lines below these levels are dropped (info by default; --verbose: debug).
// Safe to call while other threads log (a reload changes levels live).
void set_levels(const level_spec& spec);
void set_min_level(level l);  // set_levels({l}): no per-subsystem levels
level_spec current_levels();

// Whether some subsystem logs at `l` (cheap: one atomic load).
bool enabled(level l);
// Whether a line `event` at `l` is written. Without per-subsystem levels one
// atomic compare; with them a scan of the (few) overrides, no allocation.
bool enabled(level l, std::string_view event);

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
