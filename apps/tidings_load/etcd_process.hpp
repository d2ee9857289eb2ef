#pragma once

// The etcd a benchmark cluster registers in (ADR 0022) when the benchmark
// starts its own nodes: one or three members on loopback at free ports,
// their data in a fresh temporary directory, heartbeats and elections short
// so member leases of 2 s work; killed with the benchmark
// (PR_SET_PDEATHSIG) and the directory removed by the destructor. Binary:
// $TIDINGS_ETCD, else /usr/bin/etcd.
//
// tests/support/etcd_cluster does the same for the tests, with faults
// (kill, pause, restart of a member) the benchmark does not need; the tool
// does not link the tests' support library.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tidings::load {

class etcd_process {
 public:
  // Throws std::runtime_error (with the members' logs) when they are not
  // healthy within `start_timeout`.
  etcd_process(std::size_t members, std::chrono::milliseconds start_timeout);
  ~etcd_process();
  etcd_process(const etcd_process&) = delete;
  etcd_process& operator=(const etcd_process&) = delete;

  // "http://127.0.0.1:PORT,...", what `tidingsd --etcd` takes.
  const std::string& endpoints() const { return endpoints_; }

 private:
  struct member {
    std::string name;
    std::string client_url;
    std::string peer_url;
    pid_t pid = -1;
  };
  void launch(const member& m, const std::string& initial_cluster, pid_t* pid) const;
  std::string log(const member& m) const;
  void stop_all();

  std::filesystem::path dir_;
  std::string binary_;
  std::vector<member> members_;
  std::string endpoints_;
};

}  // namespace tidings::load
