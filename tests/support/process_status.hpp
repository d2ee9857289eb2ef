#pragma once

// Small pieces both process launchers of the test support use.

#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tidings::testing {

inline std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Exit status as a shell would report it, so a crash never reads as success.
inline int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace tidings::testing
