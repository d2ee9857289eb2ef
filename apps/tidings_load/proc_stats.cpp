#include "apps/tidings_load/proc_stats.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

namespace tidings::load {

std::optional<long long> rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      long long kb = 0;
      if (fields >> kb) return kb * 1024;
    }
  }
  return std::nullopt;
}

std::optional<double> cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces and parentheses; fields resume after the last ')'.
  const auto close = all.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(all.substr(close + 1));
  std::string field;
  // After ')': state is field 3; utime and stime are fields 14 and 15.
  unsigned long long utime = 0, stime = 0;
  for (int n = 3; n <= 15; ++n) {
    if (!(fields >> field)) return std::nullopt;
    if (n == 14) utime = std::stoull(field);
    if (n == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

namespace {

template <typename T>
std::optional<T> sum_over(const std::vector<pid_t>& pids, std::optional<T> (*of)(pid_t)) {
  if (pids.empty()) return std::nullopt;
  T total{};
  for (const pid_t pid : pids) {
    const auto v = of(pid);
    if (!v) return std::nullopt;
    total += *v;
  }
  return total;
}

}  // namespace

std::optional<long long> rss_bytes(const std::vector<pid_t>& pids) {
  return sum_over<long long>(pids, &rss_bytes);
}

std::optional<double> cpu_seconds(const std::vector<pid_t>& pids) {
  return sum_over<double>(pids, &cpu_seconds);
}

double own_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

long raise_open_files_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
    getrlimit(RLIMIT_NOFILE, &lim);
  }
  return static_cast<long>(lim.rlim_cur);
}

}  // namespace tidings::load
