#include "apps/tidings_load/node_process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace tidings::load {

namespace {

constexpr std::size_t tail_lines = 40;

}  // namespace

node_process::node_process(const std::string& binary, const std::vector<std::string>& extra_args,
                           std::chrono::milliseconds start_timeout)
    : binary_(binary), extra_args_(extra_args) {
  std::string templ = (std::filesystem::temp_directory_path() / "tidings-load-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  data_dir_ = templ;
  launch("127.0.0.1:0", start_timeout);
}

void node_process::restart(std::chrono::milliseconds start_timeout) {
  launch("127.0.0.1:" + std::to_string(port_), start_timeout);
}

void node_process::kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  reap();
}

void node_process::launch(const std::string& listen, std::chrono::milliseconds start_timeout) {
  {
    std::lock_guard lock(mutex_);
    listening_port_.reset();
    cluster_address_.clear();
    node_id_.clear();
    eof_ = false;
  }
  const auto& binary = binary_;
  std::vector<std::string> args{binary, "--listen", listen, "--data-dir", data_dir_.string()};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  cluster_ = std::find(extra_args_.begin(), extra_args_.end(), "--cluster-listen") != extra_args_.end();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    // Never leave a node running behind a crashed benchmark.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fds[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    // asio's sockets are not close-on-exec: a node restarted mid-run must not
    // inherit the benchmark's sessions.
    close_range(3, ~0U, 0);
    execv(binary.c_str(), argv.data());
    const std::string msg = "exec " + binary + ": " + std::strerror(errno) + "\n";
    [[maybe_unused]] auto n = write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  close(fds[1]);
  stderr_fd_ = fds[0];
  reader_ = std::thread([this] { read_stderr(); });

  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, start_timeout, [this] { return up() || eof_; });
  if (!up()) {
    const bool exited = eof_;
    lock.unlock();
    const std::string tail = log_tail();
    stop(std::chrono::seconds(5));
    throw std::runtime_error(std::string(exited     ? "tidingsd exited before listening"
                                         : cluster_ ? "tidingsd did not report node.listening and "
                                                      "cluster.listening in time"
                                                    : "tidingsd did not report node.listening in time") +
                             "; its last log lines:\n" + tail);
  }
  port_ = *listening_port_;
}

node_process::~node_process() {
  stop(std::chrono::seconds(10));
}

void node_process::read_stderr() {
  std::string pending;
  char buf[8192];
  for (;;) {
    const ssize_t n = read(stderr_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      std::string line = pending.substr(start, nl - start);
      start = nl + 1;
      if (line.find(".listening\"") != std::string::npos) take_listening(line);
      std::lock_guard lock(mutex_);
      tail_.push_back(std::move(line));
      if (tail_.size() > tail_lines) tail_.pop_front();
    }
    pending.erase(0, start);
  }
  std::lock_guard lock(mutex_);
  if (!pending.empty()) tail_.push_back(pending);
  eof_ = true;
  changed_.notify_all();
}

void node_process::take_listening(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return;
  const std::string event = j.value("event", "");
  const std::string address = j.value("address", "");
  std::lock_guard lock(mutex_);
  if (event == "node.listening" && !listening_port_) {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) return;
    try {
      listening_port_ = static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)));
    } catch (const std::exception&) {
      return;
    }
  } else if (event == "cluster.listening" && cluster_address_.empty() && !address.empty()) {
    cluster_address_ = address;
    node_id_ = j.value("node", "");
  } else {
    return;
  }
  changed_.notify_all();
}

// Either line may come first: the cluster port opens on another thread.
bool node_process::up() const {
  return listening_port_ && (!cluster_ || !cluster_address_.empty());
}

int node_process::stop(std::chrono::milliseconds timeout) {
  int status = -1;
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    {
      // The pipe reaches EOF when the node exits: no need to poll waitpid.
      std::unique_lock lock(mutex_);
      if (!changed_.wait_for(lock, timeout, [this] { return eof_; })) {
        lock.unlock();
        kill(pid_, SIGKILL);
      }
    }
    status = reap();
  }
  std::error_code ec;
  std::filesystem::remove_all(data_dir_, ec);
  return status;
}

int node_process::reap() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (reader_.joinable()) reader_.join();
  if (stderr_fd_ >= 0) close(stderr_fd_);
  stderr_fd_ = -1;
  return status;
}

std::string node_process::log_tail() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& l : tail_) out += "  " + l + "\n";
  return out;
}

}  // namespace tidings::load
