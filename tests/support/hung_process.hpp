#pragma once

// SIGSTOPs a process and SIGCONTs it again when asked or, whatever happens,
// when it goes out of scope: a node left stopped would answer nothing to
// whatever the test (or a later step of the teardown) asks it. The
// harness's SIGKILL works on a stopped process as well; this only makes
// sure nothing before it waits on one.

#include <signal.h>
#include <sys/types.h>

#include <stdexcept>

namespace tidings::testing {

class hung_process {
 public:
  explicit hung_process(pid_t pid) : pid_(pid) {
    if (pid_ <= 0 || ::kill(pid_, SIGSTOP) != 0) throw std::runtime_error("cannot SIGSTOP the process");
  }
  ~hung_process() { resume(); }
  hung_process(const hung_process&) = delete;
  hung_process& operator=(const hung_process&) = delete;

  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

}  // namespace tidings::testing
