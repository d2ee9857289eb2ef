#include "tests/support/postgres_server.hpp"

#include "tests/support/spawned_server.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tidings::testing {

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

std::string find_bindir() {
  if (const char* env = std::getenv("TIDINGS_PG_BINDIR"); env && *env) return env;
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    auto name = entry.path().filename().string();
    int version = std::atoi(name.c_str());
    if (version > best_version && fs::exists(entry.path() / "bin" / "postgres")) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  if (best.empty()) throw std::runtime_error("postgres_server: no /usr/lib/postgresql/*/bin/postgres");
  return best;
}

}  // namespace

postgres_server::postgres_server() : bindir_(find_bindir()) {
  if (::geteuid() == 0) {
    passwd* pw = ::getpwnam("postgres");
    if (!pw) throw std::runtime_error("postgres_server: running as root and there is no `postgres` user");
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    as_other_user_ = true;
  } else {
    uid_ = ::geteuid();
    gid_ = ::getegid();
  }
  auto pattern = (fs::temp_directory_path() / "tidings-pg-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    throw std::runtime_error(std::string("postgres_server: mkdtemp: ") + std::strerror(errno));
  }
  dir_ = pattern;
  data_dir_ = dir_ + "/data";
  log_path_ = dir_ + "/server.log";
  try {
    if (as_other_user_ && ::chown(dir_.c_str(), uid_, gid_) != 0) {
      throw std::runtime_error(std::string("postgres_server: chown: ") + std::strerror(errno));
    }
    pid_t initdb = launch({bindir_ + "/initdb", "-D", data_dir_, "-U", "postgres", "-A", "trust", "-E",
                           "UTF8", "--locale=C", "--no-sync"});
    int fd = open_pidfd(initdb);
    bool done = fd >= 0 && poll_pidfd(fd, std::chrono::seconds(120));
    if (fd >= 0) ::close(fd);
    if (!done) ::kill(initdb, SIGKILL);
    int status = 0;
    ::waitpid(initdb, &status, 0);
    if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error("postgres_server: initdb failed:\n" + text_tail(log()));
    }
    start();
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw;
  }
}

postgres_server::~postgres_server() {
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; the directory still goes.
  }
  // After kill() without a restart the postmaster could not remove its
  // System V segment; its id is on line 7 of postmaster.pid.
  {
    std::ifstream pidfile(data_dir_ + "/postmaster.pid");
    std::string line;
    for (int i = 0; i < 7 && std::getline(pidfile, line); ++i) {
    }
    std::istringstream fields(line);
    unsigned long key = 0;
    long id = -1;
    if (pidfile && fields >> key >> id && id >= 0) ::shmctl(static_cast<int>(id), IPC_RMID, nullptr);
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string postgres_server::conninfo() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres user=postgres connect_timeout=10";
}

std::string postgres_server::log() const {
  return read_text_file(log_path_);
}

pid_t postgres_server::launch(const std::vector<std::string>& argv) const {
  return spawn_logged(argv, log_path_, dir_,
                      as_other_user_ ? std::optional<run_as>(run_as{uid_, gid_}) : std::nullopt);
}

void postgres_server::start() {
  if (running()) return;
  bool first = port_ == 0;
  std::string why;
  // Only a first start may move to another port when the picked one was
  // taken between releasing and postgres binding it.
  for (int attempt = 0; attempt < (first ? 5 : 1); ++attempt) {
    if (first) port_ = pick_loopback_port();
    pid_ = launch({bindir_ + "/postgres", "-D", data_dir_, "-p", std::to_string(port_), "-c",
                   "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir_, "-c", "fsync=off",
                   "-c", "full_page_writes=off", "-c", "synchronous_commit=off", "-c", "max_connections=50",
                   // Dynamic shared memory in the data directory, so nothing outlives it in /dev/shm.
                   "-c", "dynamic_shared_memory_type=mmap"});
    if (await_ready(std::chrono::seconds(60), &why)) return;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      reap(std::chrono::seconds(10));
    }
    if (why.find("Address already in use") == std::string::npos) break;
  }
  throw std::runtime_error("postgres_server: postgres did not start on port " + std::to_string(port_) + ": " +
                           why + "\n" + text_tail(log()));
}

bool postgres_server::await_ready(milliseconds timeout, std::string* why) {
  // The one bounded retry loop: an external process's readiness shows only
  // by trying to connect. Between tries it waits on the postmaster's pidfd,
  // so a server that dies is noticed at once, not at the timeout.
  int fd = open_pidfd(pid_);
  auto deadline = clock_type::now() + timeout;
  auto info = conninfo();
  bool ready = false;
  for (;;) {
    if (PQping(info.c_str()) == PQPING_OK) {
      ready = true;
      break;
    }
    if (clock_type::now() >= deadline) {
      *why = "not accepting connections after " + std::to_string(timeout.count()) + " ms";
      break;
    }
    if (fd >= 0 && poll_pidfd(fd, milliseconds(20))) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      *why = "postgres exited";
      auto text = log();
      if (text.find("Address already in use") != std::string::npos) *why += " (Address already in use)";
      break;
    }
  }
  if (fd >= 0) ::close(fd);
  return ready;
}

void postgres_server::reap(milliseconds timeout) {
  reap_child(pid_, timeout);
  pid_ = -1;
}

void postgres_server::stop() {
  if (!running()) return;
  ::kill(pid_, SIGINT);  // fast shutdown
  reap(std::chrono::seconds(30));
}

void postgres_server::kill() {
  if (!running()) return;
  // Frozen first, so it forks no backend between listing and killing; its
  // children, once it is gone, would be reparented and no longer findable.
  ::kill(pid_, SIGSTOP);
  std::vector<int> children;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    auto name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after ')'.
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != pid_) continue;
    pid_t child = std::atoi(name.c_str());
    int fd = open_pidfd(child);
    if (fd < 0) continue;
    ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
    children.push_back(fd);
  }
  ::kill(pid_, SIGKILL);
  reap(std::chrono::seconds(10));
  // Backends still attached to shared memory would keep a restart from
  // starting ("pre-existing shared memory block is still in use").
  for (int fd : children) {
    poll_pidfd(fd, std::chrono::seconds(10));
    ::close(fd);
  }
}

pg_rows pg_query(const std::string& conninfo, const std::string& sql) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error("pg_query: connect: " + message);
  }
  PGresult* res = PQexec(conn, sql.c_str());
  auto status = PQresultStatus(res);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string message = PQresultErrorMessage(res);
    PQclear(res);
    PQfinish(conn);
    throw std::runtime_error("pg_query: " + sql + ": " + message);
  }
  pg_rows rows;
  for (int r = 0; r < PQntuples(res); ++r) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < PQnfields(res); ++c) row.emplace_back(PQgetvalue(res, r, c));
  }
  PQclear(res);
  PQfinish(conn);
  return rows;
}

bool await_process_exit(int pid, milliseconds timeout) {
  int fd = open_pidfd(pid);
  if (fd < 0) return errno == ESRCH;
  bool exited = poll_pidfd(fd, timeout);
  ::close(fd);
  return exited;
}

}  // namespace tidings::testing
