#include "apps/tidings_load/etcd_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/http_client.hpp"

namespace tidings::load {

namespace {

// A port the kernel just handed out on loopback (free unless someone takes
// it in the moment before etcd binds it).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    throw std::runtime_error("bind: " + std::string(std::strerror(errno)));
  }
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

etcd_process::etcd_process(std::chrono::milliseconds start_timeout) {
  std::string templ = (std::filesystem::temp_directory_path() / "tidings-load-etcd-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  dir_ = templ;
  const char* env = std::getenv("TIDINGS_ETCD");
  const std::string binary = env && *env ? env : "/usr/bin/etcd";
  const auto client = "http://127.0.0.1:" + std::to_string(free_port());
  const auto peer = "http://127.0.0.1:" + std::to_string(free_port());
  endpoint_ = client;
  std::vector<std::string> args{binary,
                                "--name",
                                "load",
                                "--data-dir",
                                (dir_ / "data").string(),
                                "--listen-client-urls",
                                client,
                                "--advertise-client-urls",
                                client,
                                "--listen-peer-urls",
                                peer,
                                "--initial-advertise-peer-urls",
                                peer,
                                "--initial-cluster",
                                "load=" + peer,
                                "--heartbeat-interval",
                                "25",
                                "--election-timeout",
                                "250",
                                "--log-level",
                                "warn"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto log_path = (dir_ / "etcd.log").string();
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    close_range(3, ~0U, 0);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  const client::endpoint ep{"127.0.0.1",
                            static_cast<std::uint16_t>(std::stoi(client.substr(client.rfind(':') + 1)))};
  for (auto pause = std::chrono::milliseconds(10);;
       pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
    try {
      auto r = client::request(ep, "GET", "/health", {}, {}, std::chrono::milliseconds(500));
      if (r.status == 200 && r.body.find("\"true\"") != std::string::npos) return;
    } catch (const std::exception&) {
      // not listening yet
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("etcd (" + binary + ") exited at start; its log:\n" + log());
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      auto tail = log();
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      throw std::runtime_error("etcd was not healthy in time; its log:\n" + tail);
    }
    std::this_thread::sleep_for(pause);  // readiness shows only by asking
  }
}

etcd_process::~etcd_process() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string etcd_process::log() const {
  std::ifstream in(dir_ / "etcd.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tidings::load
