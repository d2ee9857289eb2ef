#include "tests/support/tidingsd_process.hpp"
#include "tests/support/build_paths.hpp"
#include "tests/support/process_status.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace tidings::testing {

namespace {

using namespace std::chrono_literals;

// How long a stopped node may take before the harness escalates to SIGKILL.
constexpr auto destructor_grace = 10s;

// Pulls the port out of `"address":"127.0.0.1:PORT"`; 0 when absent.
std::uint16_t port_from_listening_line(const std::string& line) {
  static const std::string key = "\"address\":\"";
  auto start = line.find(key);
  if (start == std::string::npos) return 0;
  start += key.size();
  auto end = line.find('"', start);
  if (end == std::string::npos) return 0;
  auto colon = line.rfind(':', end);
  if (colon == std::string::npos || colon < start) return 0;
  unsigned long port = 0;
  for (auto i = colon + 1; i < end; ++i) {
    if (line[i] < '0' || line[i] > '9') return 0;
    port = port * 10 + static_cast<unsigned long>(line[i] - '0');
    if (port > 65535) return 0;
  }
  return static_cast<std::uint16_t>(port);
}

}  // namespace

temp_dir::temp_dir() {
  auto pattern = (std::filesystem::temp_directory_path() / "tidings-it-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error(errno_text("mkdtemp"));
  path_ = pattern;
}

temp_dir::~temp_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

tidingsd_process::tidingsd_process(const std::filesystem::path& data_dir, std::vector<std::string> extra_args,
                                   std::chrono::milliseconds start_timeout,
                                   std::optional<process_user> user) {
  if (user) {
    // The data directory and all in it: the node writes there as that user.
    if (::chown(data_dir.c_str(), user->uid, user->gid) != 0) throw std::runtime_error(errno_text("chown"));
    for (const auto& entry : std::filesystem::recursive_directory_iterator(data_dir))
      if (::lchown(entry.path().c_str(), user->uid, user->gid) != 0)
        throw std::runtime_error(errno_text("lchown"));
  }
  // Everything the child needs is built before fork: after fork in a
  // threaded process only async-signal-safe calls are allowed.
  std::vector<std::string> args{tidingsd_path(), "--listen", "127.0.0.1:0", "--data-dir", data_dir.string()};
  for (auto& a : extra_args) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  // CLOEXEC so that a node started later does not inherit this pipe and keep it open.
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe2"));

  pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(errno_text("fork"));
  }
  if (pid_ == 0) {
    if (user && (::setgroups(0, nullptr) != 0 || ::setgid(user->gid) != 0 || ::setuid(user->uid) != 0))
      ::_exit(126);
    // A crashed or aborted test run must not leave nodes behind (set after
    // setuid, which clears it).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    // The test's own sockets stay the test's (Asio opens them without CLOEXEC).
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    ::execv(argv[0], argv.data());
    static const char msg[] = "{\"event\":\"harness.exec_failed\"}\n";
    [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  stderr_fd_ = fds[0];

  reader_ = std::thread([this] {
    std::string partial;
    char buf[8192];
    for (;;) {
      auto n = ::read(stderr_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard lock(mutex_);
      partial.append(buf, static_cast<std::size_t>(n));
      std::size_t begin = 0;
      for (auto nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n', begin)) {
        lines_.emplace_back(partial, begin, nl - begin);
        begin = nl + 1;
      }
      partial.erase(0, begin);
      log_cv_.notify_all();
    }
    std::lock_guard lock(mutex_);
    if (!partial.empty()) lines_.push_back(std::move(partial));
    eof_ = true;
    log_cv_.notify_all();
  });

  const std::string needle = "\"event\":\"node.listening\"";
  std::string failure;
  if (!await_log(needle, start_timeout)) {
    std::lock_guard lock(mutex_);
    failure =
        eof_ ? std::string("tidingsd exited before logging node.listening")
             : "tidingsd did not log node.listening within " + std::to_string(start_timeout.count()) + " ms";
  } else {
    std::lock_guard lock(mutex_);
    for (const auto& line : lines_) {
      if (line.find(needle) != std::string::npos) {
        port_ = port_from_listening_line(line);
        break;
      }
    }
    if (port_ == 0) failure = "node.listening line carries no \"address\":\"HOST:PORT\"";
  }
  if (!failure.empty()) {
    kill9();
    if (reader_.joinable()) reader_.join();
    ::close(stderr_fd_);
    stderr_fd_ = -1;
    throw std::runtime_error(failure + "; command: " + args[0] + "; log:\n" + log());
  }
}

tidingsd_process::~tidingsd_process() {
  try {
    if (pid_ > 0 && terminate(destructor_grace) == -1) kill9();
  } catch (const std::exception&) {
    kill9();
  }
  if (reader_.joinable()) reader_.join();
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

client::endpoint tidingsd_process::endpoint() const {
  client::endpoint ep;
  ep.host = "127.0.0.1";
  ep.port = port_;
  return ep;
}

void tidingsd_process::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

int tidingsd_process::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  // The pidfd lets us wait for exit with a deadline instead of polling waitpid.
  // Through syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C", so the wrapper does not link from C++.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd < 0) throw std::runtime_error(errno_text("pidfd_open"));
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool exited = false;
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    pollfd p{pidfd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    exited = r > 0;
    break;
  }
  ::close(pidfd);
  if (!exited) return -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return decode_status(status);
}

bool tidingsd_process::await_log(const std::string& needle, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  std::size_t scanned = 0;
  auto found = [&] {
    for (; scanned < lines_.size(); ++scanned) {
      if (lines_[scanned].find(needle) != std::string::npos) return true;
    }
    return false;
  };
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!found()) {
    if (eof_) return false;  // the process is gone; nothing more will come
    if (log_cv_.wait_until(lock, deadline) == std::cv_status::timeout) return found();
  }
  return true;
}

std::string tidingsd_process::log() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& line : lines_) {
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace tidings::testing
