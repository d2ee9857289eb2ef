#pragma once

// The etcd a benchmark cluster registers in (ADR 0022) when the benchmark
// starts its own nodes: one member on loopback at free ports, its data in a
// fresh temporary directory, heartbeats and elections short so member
// leases of 2 s work; killed with the benchmark (PR_SET_PDEATHSIG) and its
// directory removed by the destructor. Binary: $TIDINGS_ETCD, else
// /usr/bin/etcd.

#include <chrono>
#include <filesystem>
#include <string>

#include <sys/types.h>

namespace tidings::load {

class etcd_process {
 public:
  // Throws std::runtime_error (with etcd's log) when it is not healthy
  // within `start_timeout`.
  explicit etcd_process(std::chrono::milliseconds start_timeout);
  ~etcd_process();
  etcd_process(const etcd_process&) = delete;
  etcd_process& operator=(const etcd_process&) = delete;

  // "http://127.0.0.1:PORT", what `tidingsd --etcd` takes.
  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string log() const;

  std::filesystem::path dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace tidings::load
