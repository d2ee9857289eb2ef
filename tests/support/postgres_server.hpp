#pragma once

// A throwaway PostgreSQL server for tests (Debian's postgresql package):
// initdb into a fresh temporary directory, `postgres` listening on 127.0.0.1
// at a free ephemeral port with its unix socket inside that directory, and
// everything removed again by the destructor. stop(), kill() and start()
// let a test take the server away and bring it back on the same port and
// data directory.
//
// PostgreSQL refuses to run as root; tests run as root here and in CI, so a
// root test process runs initdb and postgres as the `postgres` system user
// (setuid in the child) in a directory chowned to it. As another user they
// run as that user.
//
// Binaries: $TIDINGS_PG_BINDIR, else the newest /usr/lib/postgresql/*/bin.
// Failures throw std::runtime_error with the server log's tail.

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tidings::testing {

class postgres_server {
 public:
  // initdb and start(); throws when either fails.
  postgres_server();
  // stop() (SIGKILL when it does not stop in time) and removes the directory.
  ~postgres_server();
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;

  // Starts postgres and returns once it accepts connections. The first start
  // picks the port (bind 127.0.0.1:0, release, retry on a clash); later
  // starts reuse it, so conninfo() stays valid across restarts.
  void start();
  // Fast shutdown (SIGINT): clients get a FATAL and are disconnected.
  void stop();
  // A crash: SIGKILL to the postmaster and every backend, as an OOM kill or
  // a power loss would do; returns once they are all gone. start() then
  // runs crash recovery.
  void kill();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  // "host=127.0.0.1 port=N dbname=postgres user=postgres connect_timeout=10"
  std::string conninfo() const;
  const std::string& directory() const { return dir_; }
  // The server's output so far (its log), for failure messages.
  std::string log() const;

 private:
  pid_t launch(const std::vector<std::string>& argv) const;
  bool await_ready(std::chrono::milliseconds timeout, std::string* why);
  void reap(std::chrono::milliseconds timeout);

  std::string bindir_;
  std::string dir_;       // temp root: data/, the unix socket, server.log
  std::string data_dir_;  // dir_ + "/data"
  std::string log_path_;
  int port_ = 0;
  pid_t pid_ = -1;  // postmaster, a child of this process
  uid_t uid_ = 0;   // what the server runs as
  gid_t gid_ = 0;
  bool as_other_user_ = false;
};

using pg_rows = std::vector<std::vector<std::string>>;

// Runs SQL through libpq synchronously (a fresh connection each call) and
// returns the rows of the last result, every value as text (NULL as "").
// Throws std::runtime_error with the server's message on failure.
pg_rows pg_query(const std::string& conninfo, const std::string& sql);

// Waits until process `pid` (any process on this host, e.g. a server backend
// from pg_stat_activity.pid) has exited, at most `timeout`, by polling a
// pidfd: no sleep. True when it is gone (or never existed).
bool await_process_exit(int pid, std::chrono::milliseconds timeout);

}  // namespace tidings::testing
