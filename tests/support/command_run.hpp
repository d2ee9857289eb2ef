#pragma once

// Running a program (the CLI, or tidingsd where it is expected not to start)
// as a child process: stdin fed from a string, stdout and stderr captured,
// every wait bounded by a deadline, and the child killed (SIGKILL) and reaped
// when the deadline passes or the handle goes away. Nothing here sleeps: waits
// are poll() on the pipes and on a pidfd of the child.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tidings::testing {

// The tidingsd binary the harness starts (the same path tidingsd_process uses).
const char* tidingsd_binary();

struct command_result {
  int exit_code = -1;      // as a shell reports it: 128+N for signal N; -1 when killed on timeout
  bool timed_out = false;  // the deadline passed; the child was killed
  std::string out;         // everything read from stdout
  std::string err;         // everything read from stderr
};

// "exit N (timed out), stdout: ..., stderr: ..." for failure messages.
std::string describe(const command_result& r);

class child_process {
 public:
  // Starts argv[0] (a path; no PATH search) with the arguments. `stdin_data`:
  // written to the child's stdin, which is then closed; nullopt: stdin is
  // /dev/null. Throws std::runtime_error when the process cannot be started
  // (an exec failure shows as exit code 127 instead).
  explicit child_process(std::vector<std::string> argv, std::optional<std::string> stdin_data = std::nullopt);
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const { return pid_; }

  // Reads output until stdout holds at least `lines` newline-terminated
  // lines, the child exits, or `timeout` passes. True when the lines are there.
  bool await_stdout_lines(std::size_t lines, std::chrono::milliseconds timeout);

  // Waits for the child to exit and for both pipes to reach their end, at
  // most `timeout`; on timeout kills the child (SIGKILL). Returns everything
  // captured. Calling it again returns the same result.
  command_result wait(std::chrono::milliseconds timeout);

  // What was captured so far (complete after wait()).
  const std::string& out() const { return result_.out; }
  const std::string& err() const { return result_.err; }

 private:
  // One poll() round over the open pipes and the pidfd, at most until
  // `deadline`; false when nothing can happen any more (all closed and reaped).
  bool pump(std::chrono::steady_clock::time_point deadline);
  void reap(bool block);
  void kill_and_reap();
  void close_fd(int& fd);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string stdin_data_;
  std::size_t stdin_written_ = 0;
  bool exited_ = false;
  command_result result_;
};

// Runs the command to completion (bounded by `timeout`) and returns what it did.
command_result run_command(std::vector<std::string> argv,
                           std::optional<std::string> stdin_data = std::nullopt,
                           std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace tidings::testing
