#pragma once

// A throwaway etcd cluster for tests (Debian's etcd-server): one or three
// members on 127.0.0.1 at free ports, each with its data directory in one
// fresh temporary directory, heartbeats and elections short (25 ms, 250 ms)
// so leases of 1-2 s and failovers are quick, everything removed again by
// the destructor. Members can be killed, paused and started again on the
// same ports and data.
//
// Binary: $TIDINGS_ETCD, else /usr/bin/etcd. Failures throw
// std::runtime_error with the member's log tail.

#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tidings::testing {

// etcd's client port over TLS (issue 24): served with this certificate
// (for IP:127.0.0.1), and with client_ca set, only to clients presenting a
// certificate that CA signed (etcd's --client-cert-auth). Health is then
// asked on a plain metrics port of its own.
struct etcd_tls {
  std::string cert;
  std::string key;
  std::string client_ca;
};

class etcd_cluster {
 public:
  // Starts every member and returns once each reports itself healthy.
  explicit etcd_cluster(int members = 1, std::optional<etcd_tls> tls = std::nullopt);
  ~etcd_cluster();
  etcd_cluster(const etcd_cluster&) = delete;
  etcd_cluster& operator=(const etcd_cluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  // "http://127.0.0.1:PORT" (https:// with TLS) of each member, in member order.
  std::vector<std::string> client_urls() const;
  // The same, comma-separated (what `tidingsd --etcd` takes).
  std::string endpoints() const;

  void kill(int member);    // SIGKILL, reaped
  void start(int member);   // again, on its ports and data; returns once healthy
  void pause(int member);   // SIGSTOP
  void resume(int member);  // SIGCONT
  std::string log(int member) const;

 private:
  struct member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    int metrics_port = 0;  // with TLS: where /health is asked
    pid_t pid = -1;
    bool paused = false;
  };
  void launch(int index);
  bool await_healthy(int index, std::string* why);

  std::string client_url(const member& m) const;

  std::string binary_;
  std::optional<etcd_tls> tls_;
  std::string dir_;
  std::vector<member> members_;
};

}  // namespace tidings::testing
