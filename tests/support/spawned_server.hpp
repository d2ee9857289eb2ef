#pragma once

// What the test servers (PostgreSQL, etcd) have in common: a free loopback
// port, a child process whose output goes to a log file, and bounded waits
// on its exit through a pidfd, with no sleeps.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tidings::testing {

// A port on 127.0.0.1 that was free a moment ago (bind to 0, release): the
// server may still lose it to another process, so callers retry on a clash.
int pick_loopback_port();

struct run_as {
  uid_t uid;
  gid_t gid;
};

// Starts argv[0] (a path) in workdir, stdin from /dev/null, stdout and
// stderr appended to log_path, in its own process group, holding no file
// descriptor of the test's; optionally as another user. Throws
// std::runtime_error when it cannot fork.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path,
                   const std::string& workdir, std::optional<run_as> user = std::nullopt);

// A pidfd of pid (-1 on failure), and a wait on one: true when its process
// exited within timeout.
int open_pidfd(pid_t pid);
bool poll_pidfd(int fd, std::chrono::milliseconds timeout);

// Waits for child pid to exit, at most timeout; SIGKILL after that. Reaps it.
void reap_child(pid_t pid, std::chrono::milliseconds timeout);

// True when child pid exits within timeout (it is reaped then); false when
// it still runs. For "await readiness, but notice at once if it died".
bool child_exited_within(pid_t pid, std::chrono::milliseconds timeout);

// The last bytes of a text, for failure messages.
std::string text_tail(const std::string& text, std::size_t bytes = 2000);

// A whole file's text ("" when it cannot be read).
std::string read_text_file(const std::string& path);

}  // namespace tidings::testing
