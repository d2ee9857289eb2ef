#pragma once

#include <string>
#include <utility>

namespace tidings::persistence {

// Outcome of a storage call. Must be checked; ok() or a message for the log.
class [[nodiscard]] status {
 public:
  status() = default;
  static status error(std::string message) { return status(std::move(message)); }
  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  explicit status(std::string message) : message_(std::move(message)) {}
  std::string message_;
};

}  // namespace tidings::persistence
