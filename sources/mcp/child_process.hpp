#pragma once

// A child process with piped stdin/stdout/stderr on the sources thread: the
// stdio MCP transport's server, and the HTTP test servers. The child runs in
// its own process group so stopping it also stops what it spawned (npx, sh).
// stdout and stderr arrive as lines (each capped; an overlong line is
// dropped and reported); stop() ends the child and reaps it before it
// returns.

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace tidings::sources::mcp {

struct child_options {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // added to (or replacing in) ours
  std::string cwd;
  std::size_t max_line_bytes = 16 * 1024 * 1024;
  std::size_t max_stderr_line_bytes = 16 * 1024;
};

struct child_handlers {
  std::function<void(std::string line)> stdout_line;
  std::function<void(std::string line)> stderr_line;
  // A stdout line over the cap was dropped.
  std::function<void(std::size_t bytes)> oversized;
  // stdout reached EOF or failed: the child is gone or going.
  std::function<void(std::string reason)> exited;
};

class child_process : public std::enable_shared_from_this<child_process> {
 public:
  explicit child_process(boost::asio::io_context& ioc) : ioc_(ioc) {}
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Spawns the child; "" or an error.
  std::string start(const child_options& opts, child_handlers h);
  // Queues one line for stdin ('\n' appended).
  void write_line(std::string line);
  // Closes stdin, waits up to `grace` for the child to exit, then SIGTERMs
  // its group, waits up to `grace` again, then SIGKILLs it, and reaps it.
  // Blocks the calling thread for at most twice `grace`. No handler runs
  // afterwards.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // "exit code 1", "signal 9" once reaped by stop().
  const std::string& exit_status() const { return exit_status_; }

 private:
  struct reader {
    std::unique_ptr<boost::asio::posix::stream_descriptor> fd;
    std::string buffer;
    std::vector<char> chunk = std::vector<char>(64 * 1024);
    bool skipping = false;  // inside an oversized line
    std::size_t skipped = 0;
  };

  void read_loop(reader& r, bool is_stdout);
  void on_line(bool is_stdout, std::string line);
  void do_write();

  boost::asio::io_context& ioc_;
  child_options opts_;
  child_handlers handlers_;
  pid_t pid_ = -1;
  std::string exit_status_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> stdin_;
  reader stdout_;
  reader stderr_;
  std::deque<std::string> out_queue_;
  bool writing_ = false;
  bool stopped_ = false;
  bool exited_reported_ = false;
};

}  // namespace tidings::sources::mcp
