#include "tests/support/etcd_cluster.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "client/http_client.hpp"
#include "tests/support/spawned_server.hpp"

namespace tidings::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string url(int port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

}  // namespace

etcd_cluster::etcd_cluster(int members, std::optional<etcd_tls> tls) : tls_(std::move(tls)) {
  const char* env = std::getenv("TIDINGS_ETCD");
  binary_ = env && *env ? env : "/usr/bin/etcd";
  if (!fs::exists(binary_))
    throw std::runtime_error("etcd_cluster: no " + binary_ +
                             " (apt-get install etcd-server, or scripts/bootstrap)");
  auto pattern = (fs::temp_directory_path() / "tidings-etcd-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(std::string("etcd_cluster: mkdtemp: ") + std::strerror(errno));
  dir_ = pattern;
  members_.resize(static_cast<std::size_t>(members));
  std::string why;
  // A port picked free may be taken before etcd binds it: start over with
  // new ports (and fresh data) a few times.
  for (int attempt = 0; attempt < 4; ++attempt) {
    for (int i = 0; i < members; ++i) {
      auto& m = members_[static_cast<std::size_t>(i)];
      m.name = "m" + std::to_string(i);
      m.client_port = pick_loopback_port();
      m.peer_port = pick_loopback_port();
      if (tls_) m.metrics_port = pick_loopback_port();
    }
    for (int i = 0; i < members; ++i) launch(i);
    bool healthy = true;
    for (int i = 0; i < members && healthy; ++i) healthy = await_healthy(i, &why);
    if (healthy) return;
    why += "\n" + text_tail(log(0));
    for (int i = 0; i < members; ++i) kill(i);
    std::error_code ec;
    for (int i = 0; i < members; ++i) fs::remove_all(dir_ + "/m" + std::to_string(i), ec);
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
  throw std::runtime_error("etcd_cluster: did not start: " + why);
}

etcd_cluster::~etcd_cluster() {
  for (int i = 0; i < size(); ++i) kill(i);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<std::string> etcd_cluster::client_urls() const {
  std::vector<std::string> out;
  for (const auto& m : members_) out.push_back(client_url(m));
  return out;
}

std::string etcd_cluster::endpoints() const {
  std::string out;
  for (const auto& u : client_urls()) out += (out.empty() ? "" : ",") + u;
  return out;
}

std::string etcd_cluster::client_url(const member& m) const {
  return tls_ ? "https://127.0.0.1:" + std::to_string(m.client_port) : url(m.client_port);
}

void etcd_cluster::launch(int index) {
  auto& m = members_[static_cast<std::size_t>(index)];
  std::string initial;
  for (const auto& other : members_)
    initial += (initial.empty() ? "" : ",") + other.name + "=" + url(other.peer_port);
  std::vector<std::string> argv = {binary_,
                                   "--name",
                                   m.name,
                                   "--data-dir",
                                   dir_ + "/" + m.name,
                                   "--listen-client-urls",
                                   client_url(m),
                                   "--advertise-client-urls",
                                   client_url(m),
                                   "--listen-peer-urls",
                                   url(m.peer_port),
                                   "--initial-advertise-peer-urls",
                                   url(m.peer_port),
                                   "--initial-cluster",
                                   initial,
                                   "--initial-cluster-state",
                                   "new",
                                   "--initial-cluster-token",
                                   fs::path(dir_).filename().string(),
                                   "--heartbeat-interval",
                                   "25",
                                   "--election-timeout",
                                   "250",
                                   "--log-level",
                                   "warn"};
  // Idle watches hear from etcd every second, not every ten minutes.
  argv.insert(argv.end(), {"--experimental-watch-progress-notify-interval", "1s"});
  if (tls_) {
    argv.insert(argv.end(), {"--cert-file", tls_->cert, "--key-file", tls_->key, "--listen-metrics-urls",
                             url(m.metrics_port)});
    if (!tls_->client_ca.empty())
      argv.insert(argv.end(), {"--client-cert-auth", "--trusted-ca-file", tls_->client_ca});
  }
  m.pid = spawn_logged(argv, dir_ + "/" + m.name + ".log", dir_);
  m.paused = false;
}

bool etcd_cluster::await_healthy(int index, std::string* why) {
  // The one bounded retry loop: readiness shows only by asking. Between
  // tries it waits on the process, so one that dies is noticed at once.
  auto& m = members_[static_cast<std::size_t>(index)];
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    try {
      const int port = tls_ ? m.metrics_port : m.client_port;
      const auto r =
          client::request({"127.0.0.1", static_cast<std::uint16_t>(port)}, "GET", "/health", {}, {}, 500ms);
      if (r.status == 200 && r.body.find("\"true\"") != std::string::npos) return true;
    } catch (const client::transport_error&) {
      // not listening yet
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      *why = m.name + " not healthy after 20 s";
      return false;
    }
    if (child_exited_within(m.pid, 25ms)) {
      m.pid = -1;
      *why = m.name + " exited";
      return false;
    }
  }
}

void etcd_cluster::kill(int index) {
  auto& m = members_.at(static_cast<std::size_t>(index));
  if (m.pid <= 0) return;
  ::kill(m.pid, SIGKILL);
  reap_child(m.pid, 10s);
  m.pid = -1;
  m.paused = false;
}

void etcd_cluster::start(int index) {
  auto& m = members_.at(static_cast<std::size_t>(index));
  if (m.pid > 0) return;
  launch(index);
  std::string why;
  if (!await_healthy(index, &why))
    throw std::runtime_error("etcd_cluster: " + why + "\n" + text_tail(log(index)));
}

void etcd_cluster::pause(int index) {
  auto& m = members_.at(static_cast<std::size_t>(index));
  if (m.pid > 0 && !m.paused) ::kill(m.pid, SIGSTOP);
  m.paused = true;
}

void etcd_cluster::resume(int index) {
  auto& m = members_.at(static_cast<std::size_t>(index));
  if (m.pid > 0 && m.paused) ::kill(m.pid, SIGCONT);
  m.paused = false;
}

std::string etcd_cluster::log(int index) const {
  return read_text_file(dir_ + "/" + members_.at(static_cast<std::size_t>(index)).name + ".log");
}

}  // namespace tidings::testing
