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

etcd_process::etcd_process(std::size_t members, std::chrono::milliseconds start_timeout) {
  std::string templ = (std::filesystem::temp_directory_path() / "tidings-load-etcd-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  dir_ = templ;
  const char* env = std::getenv("TIDINGS_ETCD");
  binary_ = env && *env ? env : "/usr/bin/etcd";
  std::string initial_cluster;
  for (std::size_t i = 0; i < members; ++i) {
    member m;
    m.name = "load" + std::to_string(i);
    m.client_url = "http://127.0.0.1:" + std::to_string(free_port());
    m.peer_url = "http://127.0.0.1:" + std::to_string(free_port());
    initial_cluster += (initial_cluster.empty() ? "" : ",") + m.name + "=" + m.peer_url;
    endpoints_ += (endpoints_.empty() ? "" : ",") + m.client_url;
    members_.push_back(std::move(m));
  }
  // Members of a new cluster wait for each other: all start before any is asked.
  try {
    for (auto& m : members_) launch(m, initial_cluster, &m.pid);
  } catch (const std::exception&) {
    stop_all();  // the destructor does not run for a constructor that throws
    throw;
  }
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  for (auto& m : members_) {
    const auto& url = m.client_url;
    const client::endpoint ep{"127.0.0.1",
                              static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)))};
    for (auto pause = std::chrono::milliseconds(10);;
         pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
      try {
        auto r = client::request(ep, "GET", "/health", {}, {}, std::chrono::milliseconds(500));
        if (r.status == 200 && r.body.find("\"true\"") != std::string::npos) break;
      } catch (const std::exception&) {
        // not listening yet
      }
      int status = 0;
      if (waitpid(m.pid, &status, WNOHANG) == m.pid) {
        m.pid = -1;
        auto tail = log(m);
        stop_all();
        throw std::runtime_error("etcd (" + binary_ + ") member " + m.name + " exited at start; its log:\n" +
                                 tail);
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        auto tail = log(m);
        stop_all();
        throw std::runtime_error("etcd member " + m.name + " was not healthy in time; its log:\n" + tail);
      }
      std::this_thread::sleep_for(pause);  // readiness shows only by asking
    }
  }
}

void etcd_process::launch(const member& m, const std::string& initial_cluster, pid_t* pid) const {
  std::vector<std::string> args{binary_,
                                "--name",
                                m.name,
                                "--data-dir",
                                (dir_ / m.name).string(),
                                "--listen-client-urls",
                                m.client_url,
                                "--advertise-client-urls",
                                m.client_url,
                                "--listen-peer-urls",
                                m.peer_url,
                                "--initial-advertise-peer-urls",
                                m.peer_url,
                                "--initial-cluster",
                                initial_cluster,
                                "--heartbeat-interval",
                                "25",
                                "--election-timeout",
                                "250",
                                "--log-level",
                                "warn"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto log_path = (dir_ / (m.name + ".log")).string();
  const pid_t parent = getpid();
  *pid = fork();
  if (*pid < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (*pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    close_range(3, ~0U, 0);
    execv(binary_.c_str(), argv.data());
    _exit(127);
  }
}

void etcd_process::stop_all() {
  for (auto& m : members_) {
    if (m.pid <= 0) continue;
    kill(m.pid, SIGKILL);
    waitpid(m.pid, nullptr, 0);
    m.pid = -1;
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

etcd_process::~etcd_process() {
  stop_all();
}

std::string etcd_process::log(const member& m) const {
  std::ifstream in(dir_ / (m.name + ".log"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tidings::load
