#include "tests/faults/private_network.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/command_run.hpp"

namespace tidings::testing {

namespace {

const char* iptables_binary() {
  for (const char* p : {"/usr/sbin/iptables", "/sbin/iptables"})
    if (std::filesystem::exists(p)) return p;
  return nullptr;
}

void run_or_throw(std::vector<std::string> argv) {
  auto r = run_command(argv, std::nullopt, std::chrono::seconds(10));
  if (r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error("private network: " + cmd + "failed: " + describe(r));
  }
}

}  // namespace

std::string private_network_unavailable() {
  if (::geteuid() != 0) return "not root (network namespaces and iptables need it)";
  if (!iptables_binary()) return "no iptables (scripts/bootstrap installs Debian's)";
  if (!std::filesystem::exists("/usr/sbin/ip") && !std::filesystem::exists("/sbin/ip"))
    return "no ip (iproute2)";
  // Root in a container may still be refused a namespace: ask a child.
  const pid_t child = ::fork();
  if (child < 0) return std::string("fork: ") + std::strerror(errno);
  if (child == 0) ::_exit(::unshare(CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "unshare(CLONE_NEWNET) is refused here (a container without CAP_SYS_ADMIN?)";
  return {};
}

void enter_private_network() {
  if (auto why = private_network_unavailable(); !why.empty())
    throw std::runtime_error("private network: " + why);
  if (::unshare(CLONE_NEWNET) != 0)
    throw std::runtime_error(std::string("private network: unshare(CLONE_NEWNET): ") + std::strerror(errno));
  run_or_throw(
      {std::filesystem::exists("/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip", "link", "set", "lo", "up"});
}

void packet_rules::drop(uid_t uid, std::uint16_t port) {
  run_or_throw({iptables_binary(), "-w", "-A", "OUTPUT", "-p", "tcp", "-m", "owner", "--uid-owner",
                std::to_string(uid), "--dport", std::to_string(port), "-j", "DROP"});
  any_ = true;
}

void packet_rules::clear() {
  if (!any_) return;
  run_or_throw({iptables_binary(), "-w", "-F", "OUTPUT"});
  any_ = false;
}

packet_rules::~packet_rules() {
  try {
    clear();
  } catch (const std::exception&) {
    // The namespace, and its rules with it, goes with the process anyway.
  }
}

}  // namespace tidings::testing
