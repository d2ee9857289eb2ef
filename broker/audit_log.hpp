#pragma once

// The audit trail: one NDJSON line per admission denied, revocation, reload
// and admin action, to its own file (or stderr) apart from the service log.
// Lines never carry a token, a secret or a webhook URL. Denials are capped
// per second so a flood of bad tokens cannot fill the disk; the number left
// out is written with the next line.

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

 private:
  void write_locked(std::string_view action, nlohmann::json fields);

  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point window_{};
  std::size_t in_window_ = 0;
  std::size_t suppressed_ = 0;
};

}  // namespace tidings::broker
