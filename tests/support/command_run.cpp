#include "tests/support/command_run.hpp"
#include "tests/support/build_paths.hpp"
#include "tests/support/process_status.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tidings::testing {

namespace {

// Moves `fd` onto `target` in the child (async-signal-safe calls only). dup2
// onto itself would keep O_CLOEXEC, so that case clears the flag instead.
void move_fd(int fd, int target) {
  if (fd == target) {
    ::fcntl(fd, F_SETFD, 0);
  } else {
    ::dup2(fd, target);
  }
}

// A write to a pipe whose reader has gone raises SIGPIPE, which would kill
// the test process. Blocked on this thread for the write, and a SIGPIPE the
// write raised is taken off the pending set again, so nothing else changes.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set;
  sigset_t old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  auto w = ::write(fd, data, size);
  const int saved = errno;
  if (w < 0 && errno == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return w;
}

}  // namespace

const char* tidingsd_binary() {
  return tidingsd_path().c_str();
}

std::string describe(const command_result& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out, killed)" : "") +
         "\n--- stdout:\n" + r.out + "\n--- stderr:\n" + r.err;
}

child_process::child_process(std::vector<std::string> argv, std::optional<std::string> stdin_data) {
  if (argv.empty()) throw std::invalid_argument("child_process: empty argv");
  // Everything the child needs is built before fork: after fork in a
  // threaded process only async-signal-safe calls are allowed.
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);

  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err}) {
      for (int i = 0; i < 2; ++i) {
        if (p[i] >= 0) ::close(p[i]);
        p[i] = -1;
      }
    }
  };
  // CLOEXEC so that no other child (a node, another command) inherits them.
  if ((stdin_data && ::pipe2(in, O_CLOEXEC) != 0) || ::pipe2(out, O_CLOEXEC) != 0 ||
      ::pipe2(err, O_CLOEXEC) != 0) {
    auto message = errno_text("pipe2");
    close_all();
    throw std::runtime_error(message);
  }

  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    auto message = errno_text("fork");
    close_all();
    throw std::runtime_error(message);
  }
  if (pid_ == 0) {
    // A crashed or aborted test run must not leave children behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    if (in[0] >= 0) {
      move_fd(in[0], 0);
    } else {
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) move_fd(devnull, 0);
    }
    move_fd(out[1], 1);
    move_fd(err[1], 2);
    // The test's own sockets stay the test's (Asio opens them without CLOEXEC).
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    ::execv(raw[0], raw.data());
    static const char msg[] = "child_process: exec failed\n";
    [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }

  if (in[0] >= 0) ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  for (int fd : {stdin_fd_, stdout_fd_, stderr_fd_}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  if (stdin_data) {
    stdin_data_ = std::move(*stdin_data);
    if (stdin_data_.empty()) close_fd(stdin_fd_);
  }
  // Through syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C".
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd_ < 0) {
    auto message = errno_text("pidfd_open");
    kill_and_reap();
    close_fd(stdin_fd_);
    close_fd(stdout_fd_);
    close_fd(stderr_fd_);
    throw std::runtime_error(message);
  }
}

child_process::~child_process() {
  kill_and_reap();
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  close_fd(pidfd_);
}

void child_process::close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void child_process::reap(bool block) {
  if (pid_ <= 0 || exited_) return;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r == pid_) {
      exited_ = true;
      result_.exit_code = decode_status(status);
    }
    return;
  }
}

void child_process::kill_and_reap() {
  if (pid_ <= 0 || exited_) return;
  ::kill(pid_, SIGKILL);
  reap(true);
}

bool child_process::pump(std::chrono::steady_clock::time_point deadline) {
  pollfd fds[4];
  int* owners[4];
  nfds_t n = 0;
  auto add = [&](int& fd, short events) {
    if (fd < 0) return;
    fds[n] = pollfd{fd, events, 0};
    owners[n] = &fd;
    ++n;
  };
  add(stdin_fd_, POLLOUT);
  add(stdout_fd_, POLLIN);
  add(stderr_fd_, POLLIN);
  if (!exited_) add(pidfd_, POLLIN);
  if (n == 0) return false;

  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() < 0) left = std::chrono::milliseconds(0);
  int r = ::poll(fds, n, static_cast<int>(left.count()));
  if (r < 0) {
    if (errno == EINTR) return true;
    throw std::runtime_error(errno_text("poll"));
  }
  for (nfds_t i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    int& fd = *owners[i];
    if (&fd == &pidfd_) {
      reap(false);
    } else if (&fd == &stdin_fd_) {
      if (fds[i].revents & (POLLERR | POLLHUP)) {
        close_fd(stdin_fd_);  // the child closed its end: it will read no more
        continue;
      }
      auto w =
          write_without_sigpipe(fd, stdin_data_.data() + stdin_written_, stdin_data_.size() - stdin_written_);
      if (w > 0) stdin_written_ += static_cast<std::size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_written_ == stdin_data_.size())
        close_fd(stdin_fd_);
    } else {
      char buf[8192];
      auto got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        (&fd == &stdout_fd_ ? result_.out : result_.err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(fd);
      }
    }
  }
  return true;
}

bool child_process::await_stdout_lines(std::size_t lines, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto count = [&] {
    std::size_t c = 0;
    for (char ch : result_.out) c += ch == '\n' ? 1 : 0;
    return c;
  };
  while (count() < lines) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // Once stdout is closed no more lines can come.
    if (stdout_fd_ < 0) return false;
    if (!pump(deadline)) return false;
  }
  return true;
}

command_result child_process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exited_ || stdout_fd_ >= 0 || stderr_fd_ >= 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      if (!exited_) {
        result_.timed_out = true;
        kill_and_reap();
        result_.exit_code = -1;
      }
      // The child is gone, so its ends of the pipes are closed: take what is
      // still buffered, bounded in case something else holds them open.
      close_fd(stdin_fd_);
      const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while ((stdout_fd_ >= 0 || stderr_fd_ >= 0) && std::chrono::steady_clock::now() < grace) {
        if (!pump(grace)) break;
      }
      close_fd(stdout_fd_);
      close_fd(stderr_fd_);
      break;
    }
    if (!pump(deadline)) break;
  }
  close_fd(stdin_fd_);
  return result_;
}

command_result run_command(std::vector<std::string> argv, std::optional<std::string> stdin_data,
                           std::chrono::milliseconds timeout) {
  child_process child(std::move(argv), std::move(stdin_data));
  return child.wait(timeout);
}

}  // namespace tidings::testing
