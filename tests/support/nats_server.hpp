#pragma once

// A throwaway NATS server for tests (Debian's nats-server): listening on
// 127.0.0.1 at a free ephemeral port, its log in a temporary directory, and
// gone with the object. stop() and start() take it away and bring it back on
// the same port. publish() sends as any NATS client would (libnats).

#include <chrono>
#include <optional>
#include <string>

#include <sys/types.h>

namespace tidings::testing {

class nats_server {
 public:
  // With these, the server speaks TLS only (its certificate must name
  // "localhost"); the test's own connections trust `ca`.
  struct tls_files {
    std::string cert;
    std::string key;
    std::string ca;
  };

  // start(); throws with the log's tail when it does not come up.
  explicit nats_server(std::optional<tls_files> tls = std::nullopt);
  ~nats_server();
  nats_server(const nats_server&) = delete;
  nats_server& operator=(const nats_server&) = delete;

  // Returns once the server accepts connections. The first start picks the
  // port; later ones reuse it, so url() stays valid.
  void start();
  // SIGTERM, and reaped: its clients are disconnected.
  void stop();

  bool running() const { return pid_ > 0; }
  // "nats://127.0.0.1:PORT", or "tls://localhost:PORT" with TLS.
  std::string url() const;
  int port() const { return port_; }
  // Publishes `payload` on `subject` and waits for the server's answer to a
  // PING: the server has it, and sent it on to the subscribers it had.
  void publish(const std::string& subject, const std::string& payload);
  std::string log() const;

 private:
  bool await_ready(std::chrono::milliseconds timeout, std::string* why);

  std::optional<tls_files> tls_;
  std::string dir_;
  std::string log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tidings::testing
