#include "sources/mcp/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <utility>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

extern char** environ;

namespace tidings::sources::mcp {

namespace {

// Writing to the pipe of a child that died raises SIGPIPE, whose default
// action ends the whole node; with it ignored the write fails with EPIPE
// and the child's exit is reported through its stdout EOF instead.
void ignore_sigpipe_once() {
  static const bool done = [] {
    struct sigaction old {};
    if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
      std::signal(SIGPIPE, SIG_IGN);
    }
    return true;
  }();
  (void)done;
}

std::string status_text(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Waits up to `grace` for pid to exit; true (with *status) when it did.
bool wait_exit(pid_t pid, std::chrono::milliseconds grace, int* status) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more
    if (std::chrono::steady_clock::now() >= deadline) return false;
    timespec ts{0, 5L * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace

child_process::~child_process() {
  stop(std::chrono::milliseconds(200));
}

std::string child_process::start(const child_options& opts, child_handlers h) {
  if (opts.argv.empty()) return "no command configured";
  ignore_sigpipe_once();
  opts_ = opts;
  handlers_ = std::move(h);
  stopped_ = false;
  exited_reported_ = false;
  exit_status_.clear();

  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  if (pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    return std::string("pipe: ") + std::strerror(e);
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return std::string("pipe: ") + std::strerror(e);
  }

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // Nothing else of the node's: Asio opens sockets without CLOEXEC, and a
  // server holding the node's listening socket or a client's connection
  // would keep them open past their end (even past the node's).
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if (!opts.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, opts.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so stop() reaches grandchildren; default signal
  // dispositions (we may ignore SIGPIPE, the child must not inherit that).
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string s(*e);
    std::string key = s.substr(0, s.find('='));
    if (!opts.env.count(key)) env_strings.push_back(std::move(s));
  }
  env_strings.reserve(env_strings.size() + opts.env.size());
  for (const auto& [k, v] : opts.env) {
    std::string entry = k;
    entry.append("=").append(v);
    env_strings.push_back(std::move(entry));
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size());
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = opts.argv;
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    return "cannot start " + opts.argv[0] + ": " + std::strerror(rc);
  }
  pid_ = pid;
  stdin_ = std::make_unique<boost::asio::posix::stream_descriptor>(ioc_, in[1]);
  stdout_ = reader{};
  stderr_ = reader{};
  stdout_.fd = std::make_unique<boost::asio::posix::stream_descriptor>(ioc_, out[0]);
  stderr_.fd = std::make_unique<boost::asio::posix::stream_descriptor>(ioc_, err[0]);
  boost::system::error_code ignored;
  stdin_->non_blocking(true, ignored);
  stdout_.fd->non_blocking(true, ignored);
  stderr_.fd->non_blocking(true, ignored);
  read_loop(stdout_, true);
  read_loop(stderr_, false);
  return {};
}

void child_process::read_loop(reader& r, bool is_stdout) {
  std::weak_ptr<child_process> weak = weak_from_this();
  r.fd->async_read_some(boost::asio::buffer(r.chunk),
                        [this, weak, &r, is_stdout](const boost::system::error_code& ec, std::size_t n) {
                          auto self = weak.lock();
                          if (!self || stopped_) return;
                          if (ec) {
                            if (!is_stdout || exited_reported_) return;
                            exited_reported_ = true;
                            auto exited = handlers_.exited;
                            std::string why =
                                ec == boost::asio::error::eof ? "closed its stdout" : ec.message();
                            // The child closed stdout: it is ending. Reap it now so the reason
                            // names its exit status and no zombie is left.
                            stop(std::chrono::milliseconds(500));
                            if (exited) exited("server process " + why + " (" + exit_status_ + ")");
                            return;
                          }
                          std::size_t limit = is_stdout ? opts_.max_line_bytes : opts_.max_stderr_line_bytes;
                          const char* p = r.chunk.data();
                          const char* end = p + n;
                          while (p < end && !stopped_) {
                            const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
                            const char* stop_at = nl ? nl : end;
                            if (r.skipping) {
                              r.skipped += stop_at - p;
                            } else {
                              r.buffer.append(p, stop_at);
                              if (r.buffer.size() > limit) {
                                r.skipping = true;
                                r.skipped = r.buffer.size();
                                r.buffer.clear();
                              }
                            }
                            if (nl) {
                              if (r.skipping) {
                                if (is_stdout && handlers_.oversized) handlers_.oversized(r.skipped);
                                r.skipping = false;
                                r.skipped = 0;
                              } else {
                                std::string line = std::move(r.buffer);
                                r.buffer.clear();
                                if (!line.empty() && line.back() == '\r') line.pop_back();
                                on_line(is_stdout, std::move(line));
                              }
                            }
                            p = stop_at + (nl ? 1 : 0);
                          }
                          if (stopped_) return;
                          read_loop(r, is_stdout);
                        });
}

void child_process::on_line(bool is_stdout, std::string line) {
  if (line.empty()) return;
  auto& f = is_stdout ? handlers_.stdout_line : handlers_.stderr_line;
  if (f) f(std::move(line));
}

void child_process::write_line(std::string line) {
  if (stopped_ || !stdin_) return;
  line += '\n';
  out_queue_.push_back(std::move(line));
  if (!writing_) do_write();
}

void child_process::do_write() {
  if (out_queue_.empty() || stopped_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  std::weak_ptr<child_process> weak = weak_from_this();
  boost::asio::async_write(*stdin_, boost::asio::buffer(out_queue_.front()),
                           [this, weak](const boost::system::error_code& ec, std::size_t) {
                             auto self = weak.lock();
                             if (!self || stopped_) return;
                             out_queue_.pop_front();
                             if (ec) {
                               // The child's exit is reported by its stdout EOF.
                               out_queue_.clear();
                               writing_ = false;
                               return;
                             }
                             do_write();
                           });
}

void child_process::stop(std::chrono::milliseconds grace) {
  stopped_ = true;
  boost::system::error_code ignored;
  if (stdin_) stdin_->close(ignored);
  stdin_.reset();
  out_queue_.clear();
  writing_ = false;
  if (pid_ > 0) {
    // The stdio binding's shutdown: close stdin, wait, SIGTERM, SIGKILL.
    int status = 0;
    bool gone = wait_exit(pid_, grace, &status);
    if (!gone) {
      kill(-pid_, SIGTERM);
      gone = wait_exit(pid_, grace, &status);
    }
    if (!gone) {
      kill(-pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    // Whatever the server left in its group goes with it.
    kill(-pid_, SIGKILL);
    exit_status_ = status_text(status);
    pid_ = -1;
  }
  if (stdout_.fd) stdout_.fd->close(ignored);
  if (stderr_.fd) stderr_.fd->close(ignored);
}

}  // namespace tidings::sources::mcp
