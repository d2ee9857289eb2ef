#include "sources/postgres/postgres_connection.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include <libpq-fe.h>
#include <boost/asio/post.hpp>

namespace tidings::sources::postgres {

namespace {

// libpq's messages end in newlines and indent their hint lines with tabs;
// a reason is one line, so every whitespace run becomes one space.
std::string one_line(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

// PQconninfoParse options freed on every path.
struct conninfo_options {
  PQconninfoOption* options = nullptr;
  ~conninfo_options() {
    if (options) PQconninfoFree(options);
  }
};

}  // namespace

postgres_connection::postgres_connection(boost::asio::io_context& io) : io_(io), socket_(io), deadline_(io) {}

postgres_connection::~postgres_connection() {
  close();
}

void postgres_connection::connect(const std::string& conninfo,
                                  const std::vector<std::pair<std::string, std::string>>& overrides,
                                  std::chrono::milliseconds deadline, done_fn done) {
  pending_ = std::move(done);
  phase_ = phase::connecting;
  deadline_length_ = deadline;

  // Parsed first so a malformed string fails with libpq's own words before
  // any connection is tried, and so the application name can be a fallback
  // that an explicit application_name in the string overrides.
  conninfo_options parsed;
  char* parse_error = nullptr;
  parsed.options = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (!parsed.options) {
    std::string message = parse_error ? one_line(parse_error) : "out of memory parsing the connection string";
    if (parse_error) PQfreemem(parse_error);
    return fail_later("invalid connection string: " + message);
  }
  std::vector<const char*> keys;
  std::vector<const char*> values;
  auto given = [&](std::string_view keyword) {
    return std::find(keys.begin(), keys.end(), keyword) != keys.end();
  };
  for (auto* o = parsed.options; o->keyword; ++o) {
    if (!o->val) continue;
    keys.push_back(o->keyword);
    values.push_back(o->val);
  }
  // A LISTEN connection is idle for hours: without keepalives a server that
  // vanished behind a dead network would never end it (the kernel default
  // probes after 2 h). Defaults only; the connection string overrides them.
  static constexpr std::pair<const char*, const char*> keepalives[] = {
      {"fallback_application_name", "tidings"},
      {"keepalives_idle", "30"},
      {"keepalives_interval", "10"},
      {"keepalives_count", "3"}};
  for (const auto& [keyword, value] : keepalives) {
    if (given(keyword)) continue;
    keys.push_back(keyword);
    values.push_back(value);
  }
  for (const auto& [keyword, value] : overrides) {
    const auto at = std::find(keys.begin(), keys.end(), std::string_view(keyword));
    if (at != keys.end()) {
      values[static_cast<std::size_t>(at - keys.begin())] = value.c_str();
      continue;
    }
    keys.push_back(keyword.c_str());
    values.push_back(value.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);

  conn_ = PQconnectStartParams(keys.data(), values.data(), /*expand_dbname=*/0);
  if (!conn_) return fail_later("out of memory starting a PostgreSQL connection");
  if (PQstatus(conn_) == CONNECTION_BAD) return fail_later(libpq_error());
  PQsetNoticeProcessor(conn_, &postgres_connection::on_notice, this);

  arm_deadline();
  // libpq: before the first PQconnectPoll, act as if it asked for writability.
  await(wait_for::write, &postgres_connection::poll_connect);
}

void postgres_connection::arm_deadline() {
  deadline_.expires_after(deadline_length_);
  // A deadline that expired just before this re-arm may still be queued:
  // only the latest one counts.
  deadline_.async_wait([this, alive = std::weak_ptr<char>(alive_),
                        generation = ++deadline_generation_](const boost::system::error_code& ec) {
    if (alive.expired() || ec || generation != deadline_generation_) return;
    if (phase_ == phase::connecting || phase_ == phase::executing) {
      fail("timed out after " + std::to_string(deadline_length_.count()) + " ms");
    }
  });
}

std::string postgres_connection::quote_identifier(std::string_view name, std::string* error) const {
  if (!conn_) {
    if (error) *error = "not connected";
    return {};
  }
  char* quoted = PQescapeIdentifier(conn_, name.data(), name.size());
  if (!quoted) {
    if (error) *error = libpq_error();
    return {};
  }
  std::string out(quoted);
  PQfreemem(quoted);
  return out;
}

void postgres_connection::execute(const std::string& sql, done_fn done,
                                  const std::vector<std::string>& params) {
  pending_ = std::move(done);
  if (phase_ != phase::ready) return fail_later("the connection is not ready for a command");
  phase_ = phase::executing;
  first_error_.clear();
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  int sent = params.empty() ? PQsendQuery(conn_, sql.c_str())
                            : PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                                values.data(), nullptr, nullptr, 0);
  if (!sent) return fail_later(libpq_error());
  flush_query();
}

void postgres_connection::query_scalar(const std::string& sql, scalar_fn done,
                                       const std::vector<std::string>& params) {
  capture_ = true;
  captured_rows_ = -1;
  captured_columns_ = 0;
  captured_.reset();
  // Each tracking query gets the whole deadline (a poll runs for days).
  if (phase_ == phase::ready) arm_deadline();
  execute(
      sql,
      [this, done = std::move(done)](std::string error) {
        capture_ = false;
        if (!error.empty()) return done(std::move(error), std::nullopt);
        if (captured_rows_ != 1 || captured_columns_ != 1)
          return done("the tracking query must return one row of one column; it returned " +
                          std::to_string(std::max(captured_rows_, 0)) + " row(s) of " +
                          std::to_string(captured_columns_) + " column(s)",
                      std::nullopt);
        done({}, std::move(captured_));
      },
      params);
}

void postgres_connection::watch(notify_fn on_notify, done_fn lost) {
  on_notify_ = std::move(on_notify);
  lost_ = std::move(lost);
  phase_ = phase::watching;
  deadline_.cancel();
  // Notifications that arrived with the command's results are already
  // buffered in libpq and would not wake the socket: look once right away.
  boost::asio::post(io_, [this, alive = std::weak_ptr<char>(alive_)] {
    if (!alive.expired()) read_notifications();
  });
}

int postgres_connection::backend_pid() const {
  return conn_ ? PQbackendPID(conn_) : 0;
}

void postgres_connection::close() {
  if (phase_ == phase::closed) return;
  phase_ = phase::closed;
  alive_.reset();
  deadline_.cancel();
  // libpq closes its socket in PQfinish; the descriptor must only let go.
  if (socket_.is_open()) socket_.release();
  if (conn_) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  pending_ = nullptr;
  on_notify_ = nullptr;
  lost_ = nullptr;
}

void postgres_connection::poll_connect() {
  switch (PQconnectPoll(conn_)) {
    case PGRES_POLLING_READING:
      return await(wait_for::read, &postgres_connection::poll_connect);
    case PGRES_POLLING_WRITING:
      return await(wait_for::write, &postgres_connection::poll_connect);
    case PGRES_POLLING_OK: {
      // Commands are sent with PQsendQuery/PQflush, which must not block.
      if (PQsetnonblocking(conn_, 1) != 0) return fail(libpq_error());
      phase_ = phase::ready;
      auto done = std::move(pending_);
      pending_ = nullptr;
      return done({});
    }
    default:
      return fail(libpq_error());
  }
}

void postgres_connection::flush_query() {
  int r = PQflush(conn_);
  if (r < 0) return fail(libpq_error());
  if (r == 1) return await(wait_for::write, &postgres_connection::flush_query);
  await(wait_for::read, &postgres_connection::read_results);
}

void postgres_connection::read_results() {
  if (!PQconsumeInput(conn_)) return fail(libpq_error());
  while (!PQisBusy(conn_)) {
    PGresult* res = PQgetResult(conn_);
    if (!res) {
      phase_ = phase::ready;
      auto done = std::move(pending_);
      pending_ = nullptr;
      return done(std::move(first_error_));
    }
    auto status = PQresultStatus(res);
    if (capture_ && status == PGRES_TUPLES_OK && captured_rows_ < 0) {
      captured_rows_ = PQntuples(res);
      captured_columns_ = PQnfields(res);
      if (captured_rows_ == 1 && captured_columns_ == 1 && !PQgetisnull(res, 0, 0))
        captured_ = std::string(PQgetvalue(res, 0, 0), static_cast<std::size_t>(PQgetlength(res, 0, 0)));
    }
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && first_error_.empty()) {
      first_error_ = one_line(PQresultErrorMessage(res));
      if (first_error_.empty()) first_error_ = std::string("unexpected result: ") + PQresStatus(status);
    }
    PQclear(res);
  }
  await(wait_for::read, &postgres_connection::read_results);
}

void postgres_connection::read_notifications() {
  bool ok = PQconsumeInput(conn_) != 0;
  std::vector<notification> batch;
  while (PGnotify* n = PQnotifies(conn_)) {
    batch.push_back({n->relname ? n->relname : "", n->extra ? n->extra : "", n->be_pid});
    PQfreemem(n);
  }
  if (!batch.empty()) {
    std::weak_ptr<char> alive = alive_;
    auto deliver = on_notify_;  // the callee may close() and clear on_notify_
    deliver(std::move(batch));
    if (alive.expired()) return;
  }
  if (!ok || PQstatus(conn_) == CONNECTION_BAD) {
    auto error = libpq_error();
    if (!last_notice_.empty() && error.find(last_notice_) == std::string::npos)
      error = last_notice_ + "; " + error;
    return fail(std::move(error));
  }
  await(wait_for::read, &postgres_connection::read_notifications);
}

void postgres_connection::await(wait_for what, void (postgres_connection::*next)()) {
  // Re-assigned on every wait: see the header (socket changes, edge triggers).
  if (socket_.is_open()) socket_.release();
  int fd = PQsocket(conn_);
  if (fd < 0) return fail(libpq_error());
  boost::system::error_code ec;
  socket_.assign(fd, ec);
  if (ec) return fail("cannot watch the libpq socket: " + ec.message());
  auto kind = what == wait_for::read ? boost::asio::posix::stream_descriptor::wait_read
                                     : boost::asio::posix::stream_descriptor::wait_write;
  socket_.async_wait(kind,
                     [this, next, alive = std::weak_ptr<char>(alive_)](const boost::system::error_code& ec) {
                       if (alive.expired() || ec == boost::asio::error::operation_aborted) return;
                       if (ec) return fail("waiting on the PostgreSQL socket: " + ec.message());
                       (this->*next)();
                     });
}

void postgres_connection::fail(std::string error) {
  auto done = pending_ ? std::move(pending_) : std::move(lost_);
  close();
  if (done) done(std::move(error));
}

void postgres_connection::fail_later(std::string error) {
  // Never inside the call that started the request: the caller may not be
  // ready for its callback yet.
  boost::asio::post(io_, [this, error = std::move(error), alive = std::weak_ptr<char>(alive_)]() mutable {
    if (!alive.expired()) fail(std::move(error));
  });
}

std::string postgres_connection::libpq_error() const {
  auto message = conn_ ? one_line(PQerrorMessage(conn_)) : std::string();
  return message.empty() ? "unknown libpq error" : message;
}

void postgres_connection::on_notice(void* self, const char* message) {
  // Only a server error is worth keeping: in the idle state libpq passes a
  // FATAL (e.g. "terminating connection due to administrator command") here
  // just before the connection drops, and it names the reason.
  auto text = one_line(message ? message : "");
  if (text.starts_with("FATAL") || text.starts_with("PANIC") || text.starts_with("ERROR")) {
    static_cast<postgres_connection*>(self)->last_notice_ = std::move(text);
  }
}

}  // namespace tidings::sources::postgres
