#pragma once

// One non-blocking libpq connection driven by socket readiness on the
// sources io_context: connect, run one command, then hand over NOTIFYs until
// the connection is lost. No polling and no blocking call except libpq's own
// host name resolution (see postgres_config::conninfo).
//
//   idle --connect--> connecting --ok--> ready --execute--> executing --ok--> ready
//                         |                                    |
//                         +------------- error ----------------+--> closed
//   ready --watch--> watching --lost--> closed        any --close()--> closed
//
// libpq owns the socket: the stream_descriptor only borrows it for waits and
// is released (never closed) before PQfinish. The socket may change during
// the connect (libpq tries each address of a host), so the descriptor is
// re-assigned before every wait; that also makes the waits level-triggered,
// which matters because libpq may leave bytes in the kernel after one read
// and Asio's epoll registration is edge-triggered.
//
// Every callback runs on the io_context thread, at most once per request,
// and none after close(). A callback is always the last thing a handler
// does, so the owner may destroy this object inside it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

struct pg_conn;

namespace tidings::sources::postgres {

struct notification {
  std::string channel;
  std::string payload;
  int backend_pid = 0;
};

class postgres_connection {
 public:
  using done_fn = std::function<void(std::string error)>;
  using notify_fn = std::function<void(std::vector<notification>)>;

  explicit postgres_connection(boost::asio::io_context& io);
  ~postgres_connection();
  postgres_connection(const postgres_connection&) = delete;
  postgres_connection& operator=(const postgres_connection&) = delete;

  // Starts connecting with a libpq conninfo string. `done` gets "" once the
  // connection is up or libpq's error message (trimmed). `deadline` bounds
  // connect and every execute() until watch(); past it the pending request
  // fails with "timed out after N ms".
  // `overrides` replace the same keywords of the string, or are added (TLS settings).
  void connect(const std::string& conninfo, const std::vector<std::pair<std::string, std::string>>& overrides,
               std::chrono::milliseconds deadline, done_fn done);

  // Quotes an identifier for SQL (PQescapeIdentifier); "" with *error set
  // when libpq refuses it. Only once connected.
  std::string quote_identifier(std::string_view name, std::string* error) const;

  // Sends one command and awaits its results; `done` gets "" when every
  // result succeeded, else the server's error message. `params` are its
  // $1, $2, ... as text (one statement only, then).
  void execute(const std::string& sql, done_fn done, const std::vector<std::string>& params = {});

  // Runs a query that must return one row of one column (a tracking query,
  // sql_polling) and hands over its value: nullopt for SQL NULL. `done`
  // gets an error instead when the query fails or returns another shape.
  using scalar_fn = std::function<void(std::string error, std::optional<std::string> value)>;
  void query_scalar(const std::string& sql, scalar_fn done, const std::vector<std::string>& params = {});

  // From now on hands over notifications, a batch per socket wake, until
  // the connection is lost (`lost` gets the reason). Ends the deadline.
  void watch(notify_fn on_notify, done_fn lost);

  // PID of the server backend of this connection (0 when not connected).
  int backend_pid() const;

  // Releases the socket, PQfinish. No callback runs afterwards. Idempotent.
  void close();

 private:
  enum class phase { idle, connecting, ready, executing, watching, closed };
  enum class wait_for { read, write };

  void arm_deadline();
  void poll_connect();
  void flush_query();
  void read_results();
  void read_notifications();
  void await(wait_for what, void (postgres_connection::*next)());
  void fail(std::string error);
  void fail_later(std::string error);
  std::string libpq_error() const;

  static void on_notice(void* self, const char* message);

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor socket_;
  boost::asio::steady_timer deadline_;
  std::chrono::milliseconds deadline_length_{0};
  std::uint64_t deadline_generation_ = 0;
  pg_conn* conn_ = nullptr;
  phase phase_ = phase::idle;
  done_fn pending_;  // connect or execute
  notify_fn on_notify_;
  done_fn lost_;
  std::string first_error_;  // of the command being executed
  // query_scalar: the first result's shape and its value.
  bool capture_ = false;
  int captured_rows_ = -1;
  int captured_columns_ = 0;
  std::optional<std::string> captured_;
  std::string last_notice_;  // a FATAL before a disconnect comes in as a notice
  // Handlers hold a weak_ptr: once close() resets it, late completions
  // (cancelled waits, the timer) do nothing.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace tidings::sources::postgres
