#include "logging/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include "core/json_text.hpp"

namespace tidings::logging {
namespace {

constexpr std::array<std::string_view, 11> known_subsystems = {
    "admin", "hub", "http", "mcp", "node", "postgres", "source", "storage", "stream", "watch", "webhook"};

// The per-subsystem levels, read on every line. A table is never changed or
// freed once published (a reader may still hold it); set_levels publishes a
// new one and keeps the old ones in `retired`, which only grows by one per
// reload that changes the spec.
struct level_table {
  int base = static_cast<int>(level::info);
  std::vector<std::pair<std::string, int>> overrides;
};

// The lowest level any line may pass with: everything below is rejected by
// this one load, the common case (debug lines with the default "info").
std::atomic<int> floor_level{static_cast<int>(level::info)};
// Null while there are no overrides (then floor_level is the base level).
std::atomic<const level_table*> table{nullptr};

std::mutex set_mutex;                               // serializes set_levels; never taken by write()
level_spec current;                                 // guarded by set_mutex
std::vector<std::unique_ptr<level_table>> retired;  // guarded by set_mutex

std::optional<level> parse_level(std::string_view s) {
  if (s == "debug") return level::debug;
  if (s == "info") return level::info;
  if (s == "warn") return level::warn;
  if (s == "error") return level::error;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string known_list() {
  std::string out;
  for (auto s : known_subsystems) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

void append_value(std::string& out, const value& v) {
  if (auto* s = std::get_if<std::string_view>(&v)) {
    core::append_json_string(out, *s);
  } else if (auto* i = std::get_if<std::int64_t>(&v)) {
    out += std::to_string(*i);
  } else if (auto* u = std::get_if<std::uint64_t>(&v)) {
    out += std::to_string(*u);
  } else {
    out += std::get<bool>(v) ? "true" : "false";
  }
}

}  // namespace

std::string_view level_name(level l) {
  switch (l) {
    case level::debug:
      return "debug";
    case level::info:
      return "info";
    case level::warn:
      return "warn";
    case level::error:
      return "error";
  }
  return "info";
}

std::span<const std::string_view> subsystems() {
  return known_subsystems;
}

std::string_view subsystem_of(std::string_view event) {
  return event.substr(0, event.find('.'));
}

std::optional<std::string> parse_level_spec(std::string_view text, level_spec* out) {
  static const std::string levels = "debug, info, warn or error";
  level_spec spec;
  bool first = true;
  std::size_t pos = 0;
  while (true) {
    auto comma = text.find(',', pos);
    auto part =
        trim(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    if (first) {
      auto l = parse_level(part);
      if (!l) {
        if (part.find('=') != std::string_view::npos)
          return "must start with the level for every subsystem (" + levels + "), e.g. info," +
                 std::string(part);
        return "\"" + std::string(part) + "\" is not a level; use " + levels +
               ", then optionally SUBSYSTEM=LEVEL,...";
      }
      spec.base = *l;
      first = false;
    } else {
      auto eq = part.find('=');
      if (eq == std::string_view::npos)
        return "\"" + std::string(part) + "\" is not SUBSYSTEM=LEVEL (e.g. source=debug)";
      auto name = trim(part.substr(0, eq));
      auto value = trim(part.substr(eq + 1));
      if (std::find(known_subsystems.begin(), known_subsystems.end(), name) == known_subsystems.end())
        return "unknown subsystem \"" + std::string(name) + "\" (known: " + known_list() + ")";
      auto l = parse_level(value);
      if (!l) return std::string(name) + "=" + std::string(value) + ": not a level; use " + levels;
      for (const auto& o : spec.overrides)
        if (o.first == name) return "subsystem \"" + std::string(name) + "\" is given twice";
      spec.overrides.emplace_back(std::string(name), *l);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  *out = std::move(spec);
  return std::nullopt;
}

std::string to_string(const level_spec& spec) {
  std::string out(level_name(spec.base));
  for (const auto& [name, l] : spec.overrides) out.append(",").append(name).append("=").append(level_name(l));
  return out;
}

void set_levels(const level_spec& spec) {
  std::lock_guard lock(set_mutex);
  if (spec == current) return;
  int lowest = static_cast<int>(spec.base);
  const level_table* next = nullptr;
  if (!spec.overrides.empty()) {
    auto t = std::make_unique<level_table>();
    t->base = static_cast<int>(spec.base);
    for (const auto& [name, l] : spec.overrides) {
      t->overrides.emplace_back(name, static_cast<int>(l));
      lowest = std::min(lowest, static_cast<int>(l));
    }
    next = t.get();
    retired.push_back(std::move(t));
  }
  // Readers may briefly see the new floor with the old table or the other
  // way round; either way a line is judged by one of the two specs.
  table.store(next, std::memory_order_release);
  floor_level.store(lowest, std::memory_order_release);
  current = spec;
}

void set_min_level(level l) {
  level_spec spec;
  spec.base = l;
  set_levels(spec);
}

level_spec current_levels() {
  std::lock_guard lock(set_mutex);
  return current;
}

bool enabled(level l) {
  return static_cast<int>(l) >= floor_level.load(std::memory_order_relaxed);
}

bool enabled(level l, std::string_view event) {
  auto li = static_cast<int>(l);
  if (li < floor_level.load(std::memory_order_relaxed)) return false;
  const level_table* t = table.load(std::memory_order_acquire);
  if (t == nullptr) return true;
  auto name = subsystem_of(event);
  for (const auto& [sub, min] : t->overrides)
    if (sub == name) return li >= min;
  return li >= t->base;
}

void write(level l, std::string_view event, std::initializer_list<field> fields) {
  if (!enabled(l, event)) return;
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  std::string line = "{\"ts\":" + std::to_string(now) + ",\"level\":\"";
  line += level_name(l);
  line += "\",\"event\":";
  core::append_json_string(line, event);
  for (const auto& [key, v] : fields) {
    line += ',';
    core::append_json_string(line, key);
    line += ':';
    append_value(line, v);
  }
  line += "}\n";
  // One write per line keeps lines whole when threads log at once.
  std::size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace tidings::logging
