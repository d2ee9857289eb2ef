#include "tests/support/spawned_server.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tidings::testing {
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

bool poll_pidfd(int fd, milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  const auto deadline = clock_type::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()).count();
    const int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(left, 0)));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

int pick_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("pick_loopback_port: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error(std::string("pick_loopback_port: bind: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path,
                   const std::string& workdir, std::optional<run_as> user) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Opened before fork so the child needs no allocation after it.
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("spawn_logged: open " + log_path + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::runtime_error(std::string("spawn_logged: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    // Nothing else of the test's: an inherited client socket would keep a
    // connection open after the test closed it (seen with SSE sessions).
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    // Its own process group: a Ctrl-C on the test run must not reach it first.
    ::setpgid(0, 0);
    if (user && (::setgroups(0, nullptr) != 0 || ::setgid(user->gid) != 0 || ::setuid(user->uid) != 0))
      ::_exit(126);
    // Gone with the test, even a test killed outright (after setuid, which clears it).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::chdir(workdir.c_str()) != 0) ::_exit(126);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  return pid;
}

bool child_exited_within(pid_t pid, milliseconds timeout) {
  const int fd = open_pidfd(pid);
  const bool exited = fd < 0 || poll_pidfd(fd, timeout);
  if (fd >= 0) ::close(fd);
  if (exited) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  return exited;
}

void reap_child(pid_t pid, milliseconds timeout) {
  if (pid <= 0) return;
  if (child_exited_within(pid, timeout)) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

std::string text_tail(const std::string& text, std::size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tidings::testing
