#pragma once

// Starts the real tidingsd binary for integration tests: ephemeral port,
// temporary data directory (or a given one, to restart on the same data),
// stderr drained on a thread and kept for diagnostics. The destructor stops
// the process (SIGTERM, then SIGKILL after a deadline) and removes a data
// directory it created.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "client/http_client.hpp"

namespace tidings::testing {

// A user id (and group id) to run a process as; the caller owns the data.
struct process_user {
  uid_t uid;
  gid_t gid;
};

class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class tidingsd_process {
 public:
  // Starts `tidingsd --listen 127.0.0.1:0 --data-dir DIR <extra>` and waits
  // (bounded) for its `node.listening` log line. Throws on failure, with the
  // process's stderr in the message.
  // With `user` (the harness runs as root) the process runs as that user
  // and the data directory is handed to it first (the fault suite tells
  // nodes apart in iptables rules by their owner).
  explicit tidingsd_process(const std::filesystem::path& data_dir, std::vector<std::string> extra_args = {},
                            std::chrono::milliseconds start_timeout = std::chrono::seconds(20),
                            std::optional<process_user> user = std::nullopt);
  ~tidingsd_process();
  tidingsd_process(const tidingsd_process&) = delete;
  tidingsd_process& operator=(const tidingsd_process&) = delete;

  client::endpoint endpoint() const;
  pid_t pid() const { return pid_; }

  // SIGKILL and reap.
  void kill9();
  // SIGTERM and wait (bounded) for exit; returns the exit status (-1 on timeout).
  int terminate(std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // Waits until some stderr line contains `needle`; false on timeout.
  bool await_log(const std::string& needle, std::chrono::milliseconds timeout);
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable log_cv_;
  std::vector<std::string> lines_;
  bool eof_ = false;  // the reader saw the end of stderr: no more lines will come
  std::thread reader_;
};

}  // namespace tidings::testing
