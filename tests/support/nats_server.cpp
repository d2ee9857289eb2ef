#include "tests/support/nats_server.hpp"

#include <nats/nats.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <unistd.h>

#include "tests/support/spawned_server.hpp"

namespace tidings::testing {
namespace {

std::string binary() {
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server"})
    if (::access(p, X_OK) == 0) return p;
  throw std::runtime_error("nats_server: nats-server is not installed (Debian's nats-server package)");
}

// One connection attempt with a short timeout; its error, or "" when it
// worked. `ca`: TLS, trusting that CA and expecting "localhost".
std::string try_connect(const std::string& url, const std::string& ca, natsConnection** out) {
  natsOptions* opts = nullptr;
  auto s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, url.c_str());
  if (s == NATS_OK && !ca.empty()) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !ca.empty()) s = natsOptions_LoadCATrustedCertificates(opts, ca.c_str());
  if (s == NATS_OK && !ca.empty()) s = natsOptions_SetExpectedHostname(opts, "localhost");
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 2000);
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
  if (s == NATS_OK) s = natsConnection_Connect(out, opts);
  natsOptions_Destroy(opts);
  return s == NATS_OK ? std::string() : natsStatus_GetText(s);
}

}  // namespace

nats_server::nats_server(std::optional<tls_files> tls) : tls_(std::move(tls)) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tidings-nats-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("nats_server: mkdtemp failed");
  dir_ = pattern;
  log_path_ = dir_ + "/nats.log";
  start();
}

nats_server::~nats_server() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string nats_server::url() const {
  return (tls_ ? "tls://localhost:" : "nats://127.0.0.1:") + std::to_string(port_);
}

std::string nats_server::log() const {
  return read_text_file(log_path_);
}

void nats_server::start() {
  if (running()) return;
  bool first = port_ == 0;
  std::string why;
  for (int attempt = 0; attempt < (first ? 5 : 1); ++attempt) {
    if (first) port_ = pick_loopback_port();
    std::vector<std::string> argv{binary(), "-a", "127.0.0.1", "-p", std::to_string(port_)};
    if (tls_) argv.insert(argv.end(), {"--tls", "--tlscert", tls_->cert, "--tlskey", tls_->key});
    pid_ = spawn_logged(argv, log_path_, dir_);
    if (await_ready(std::chrono::seconds(20), &why)) return;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      reap_child(pid_, std::chrono::seconds(10));
      pid_ = -1;
    }
    if (why.find("address already in use") == std::string::npos) break;
  }
  throw std::runtime_error("nats_server: did not start on port " + std::to_string(port_) + ": " + why + "\n" +
                           text_tail(log()));
}

bool nats_server::await_ready(std::chrono::milliseconds timeout, std::string* why) {
  // An external process's readiness shows only by trying to connect;
  // between tries it waits on the server's pidfd, so one that dies is
  // noticed at once.
  int fd = open_pidfd(pid_);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool ready = false;
  for (;;) {
    natsConnection* conn = nullptr;
    auto error = try_connect(url(), tls_ ? tls_->ca : std::string(), &conn);
    if (error.empty()) {
      natsConnection_Destroy(conn);
      ready = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      *why = "not accepting connections: " + error;
      break;
    }
    if (fd >= 0 && poll_pidfd(fd, std::chrono::milliseconds(20))) {
      reap_child(pid_, std::chrono::seconds(1));
      pid_ = -1;
      *why = "nats-server exited";
      if (log().find("address already in use") != std::string::npos) *why += " (address already in use)";
      break;
    }
  }
  if (fd >= 0) ::close(fd);
  return ready;
}

void nats_server::stop() {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  reap_child(pid_, std::chrono::seconds(10));
  pid_ = -1;
}

void nats_server::publish(const std::string& subject, const std::string& payload) {
  natsConnection* conn = nullptr;
  auto error = try_connect(url(), tls_ ? tls_->ca : std::string(), &conn);
  if (!error.empty()) throw std::runtime_error("nats_server: publish: cannot connect: " + error);
  auto s = natsConnection_Publish(conn, subject.c_str(), payload.data(), static_cast<int>(payload.size()));
  if (s == NATS_OK) s = natsConnection_FlushTimeout(conn, 5000);
  natsConnection_Destroy(conn);
  if (s != NATS_OK) throw std::runtime_error(std::string("nats_server: publish: ") + natsStatus_GetText(s));
}

}  // namespace tidings::testing
