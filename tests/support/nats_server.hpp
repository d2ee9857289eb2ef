#pragma once

// A throwaway NATS server for tests (Debian's nats-server): listening on
// 127.0.0.1 at a free ephemeral port, its log in a temporary directory, and
// gone with the object. stop() and start() take it away and bring it back on
// the same port. publish() sends as any NATS client would (libnats).

#include <chrono>
#include <string>

#include <sys/types.h>

namespace tidings::testing {

class nats_server {
 public:
  // start(); throws with the log's tail when it does not come up.
  nats_server();
  ~nats_server();
  nats_server(const nats_server&) = delete;
  nats_server& operator=(const nats_server&) = delete;

  // Returns once the server accepts connections. The first start picks the
  // port; later ones reuse it, so url() stays valid.
  void start();
  // SIGTERM, and reaped: its clients are disconnected.
  void stop();

  bool running() const { return pid_ > 0; }
  // "nats://127.0.0.1:PORT"
  std::string url() const;
  // Publishes `payload` on `subject` and waits for the server's answer to a
  // PING: the server has it, and sent it on to the subscribers it had.
  void publish(const std::string& subject, const std::string& payload);
  std::string log() const;

 private:
  bool await_ready(std::chrono::milliseconds timeout, std::string* why);

  std::string dir_;
  std::string log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tidings::testing
