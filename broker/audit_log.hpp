#pragma once

// The audit trail: one NDJSON line per admission denied, revocation, reload
// and admin action, to its own file (or stderr) apart from the service log.
// Lines never carry a token, a secret or a webhook URL. Denials, and the
// upstream watchers' lines (a fire per change of a busy resource), are each
// capped per second so a flood cannot fill the disk or hold the lock; the
// number left out is written with the next line.

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tidings::broker {

class audit_log {
 public:
  // "-" writes to stderr; empty writes nothing.
  explicit audit_log(const std::string& path);
  ~audit_log();
  audit_log(const audit_log&) = delete;
  audit_log& operator=(const audit_log&) = delete;

  bool ok() const { return file_ != nullptr || path_.empty(); }
  const std::string& path() const { return path_; }

  // `fields` is an object; "ts" and "action" are added.
  void record(std::string_view action, nlohmann::json fields);
  // The same, but counted against the per-second cap for denials.
  void record_denial(nlohmann::json fields);
  // The same for upstream watchers' lines (watch.fired, source.*), with a
  // cap of their own.
  void record_upstream(std::string_view action, nlohmann::json fields);

 private:
  // At most `per_second` lines a second; the rest are counted.
  struct budget {
    budget(const char* field, std::size_t limit) : not_logged_field(field), per_second(limit) {}
    const char* not_logged_field;
    std::size_t per_second;
    std::chrono::steady_clock::time_point window{};
    std::size_t in_window = 0;
    std::size_t suppressed = 0;
  };
  void record_capped(budget& b, std::string_view action, nlohmann::json fields);
  void write_locked(std::string_view action, nlohmann::json fields);

  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  budget denials_{"denials_not_logged", 100};
  budget upstream_{"upstream_lines_not_logged", 100};
};

}  // namespace tidings::broker
