#pragma once

// The tidingsd the benchmark starts for itself: port 0 and a fresh data
// directory, the port learned from its `node.listening` log line (and, for
// a cluster node, started with --cluster-listen, its cluster address and id
// from `cluster.listening`: it is up once it logged both). Its stderr
// is drained on a thread for the whole run, because a node that logs per
// session would otherwise block on a full pipe and skew the measurement.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace tidings::load {

class node_process {
 public:
  // Throws std::runtime_error (with the node's last log lines) when it does
  // not come up within `start_timeout`.
  node_process(const std::string& binary, const std::vector<std::string>& extra_args,
               std::chrono::milliseconds start_timeout);
  ~node_process();
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  pid_t pid() const { return pid_; }
  // SIGKILL and reap, keeping the data directory (the restart scenario).
  void kill9();
  // Starts it again on the same port and data directory; throws like the
  // constructor.
  void restart(std::chrono::milliseconds start_timeout);
  std::uint16_t port() const { return port_; }
  // From `cluster.listening`; empty unless started with --cluster-listen.
  const std::string& cluster_address() const { return cluster_address_; }
  const std::string& node_id() const { return node_id_; }

  // SIGTERM, then SIGKILL if it has not exited within `timeout`. Returns the
  // wait status, or -1 when already stopped.
  int stop(std::chrono::milliseconds timeout);
  std::string log_tail() const;

 private:
  void launch(const std::string& listen, std::chrono::milliseconds start_timeout);
  // Waits for the exited (or killed) process and its stderr reader.
  int reap();
  void read_stderr();
  // Takes what a `node.listening` or `cluster.listening` line says.
  void take_listening(const std::string& line);
  bool up() const;  // under mutex_

  std::string binary_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::uint16_t port_ = 0;
  std::filesystem::path data_dir_;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> tail_;
  std::optional<std::uint16_t> listening_port_;
  bool cluster_ = false;  // started with --cluster-listen
  std::string cluster_address_;
  std::string node_id_;
  bool eof_ = false;
};

}  // namespace tidings::load
