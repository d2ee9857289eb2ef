#pragma once

// Figures the kernel keeps about a process: what the benchmark reports as
// the node's memory and CPU, and the client's own CPU for comparison.

#include <optional>
#include <vector>

#include <sys/types.h>

namespace tidings::load {

// VmRSS of `pid` in bytes; nullopt when it cannot be read.
std::optional<long long> rss_bytes(pid_t pid);
// utime + stime of `pid` in seconds.
std::optional<double> cpu_seconds(pid_t pid);
// The sums over several processes (a cluster's nodes); nullopt when `pids`
// is empty or one of them cannot be read.
std::optional<long long> rss_bytes(const std::vector<pid_t>& pids);
std::optional<double> cpu_seconds(const std::vector<pid_t>& pids);
// user + system CPU of this process in seconds.
double own_cpu_seconds();

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit.
long raise_open_files_limit();

}  // namespace tidings::load
