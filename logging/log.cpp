#include "logging/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>

#include "core/json_text.hpp"

namespace tidings::logging {
namespace {

std::atomic<int> min_level{static_cast<int>(level::info)};

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

void set_min_level(level l) {
  min_level.store(static_cast<int>(l));
}

bool enabled(level l) {
  return static_cast<int>(l) >= min_level.load(std::memory_order_relaxed);
}

void write(level l, std::string_view event, std::initializer_list<field> fields) {
  if (!enabled(l)) return;
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
