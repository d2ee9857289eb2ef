#include "broker/audit_log.hpp"

namespace tidings::broker {
namespace {

std::string utc_now() {
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

audit_log::audit_log(const std::string& path) : path_(path) {
  if (path_ == "-")
    file_ = stderr;
  else if (!path_.empty())
    file_ = std::fopen(path_.c_str(), "a");
}

audit_log::~audit_log() {
  if (file_ && file_ != stderr) std::fclose(file_);
}

void audit_log::record(std::string_view action, nlohmann::json fields) {
  std::lock_guard lock(mutex_);
  write_locked(action, std::move(fields));
}

void audit_log::record_denial(nlohmann::json fields) {
  record_capped(denials_, "admission_denied", std::move(fields));
}

void audit_log::record_upstream(std::string_view action, nlohmann::json fields) {
  record_capped(upstream_, action, std::move(fields));
}

void audit_log::record_capped(budget& b, std::string_view action, nlohmann::json fields) {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (now - b.window >= std::chrono::seconds(1)) {
    b.window = now;
    b.in_window = 0;
  }
  if (++b.in_window > b.per_second) {
    ++b.suppressed;
    return;
  }
  write_locked(action, std::move(fields));
}

void audit_log::write_locked(std::string_view action, nlohmann::json fields) {
  if (!file_) return;
  nlohmann::json line = {{"ts", utc_now()}, {"action", action}};
  for (auto& [k, v] : fields.items()) line[k] = v;
  for (budget* b : {&denials_, &upstream_}) {
    if (b->suppressed == 0) continue;
    line[b->not_logged_field] = b->suppressed;
    b->suppressed = 0;
  }
  auto text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace tidings::broker
