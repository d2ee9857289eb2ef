#include "sources/web/sql_poll_upstream.hpp"

#include <nlohmann/json.hpp>

#include "logging/log.hpp"
#include "sources/postgres/postgres_config.hpp"
#include "sources/postgres/postgres_connection.hpp"
#include "sources/web/backend_read.hpp"

namespace tidings::sources::web {

sql_poll_upstream::sql_poll_upstream(boost::asio::io_context& ioc, const web_resource_config& resource)
    : ioc_(ioc), resource_(resource), timer_(ioc) {}

sql_poll_upstream::~sql_poll_upstream() {
  close();
}

// Whoever asks while a query runs gets that query's answer: subscribe, the
// ticks and reads share one connection and one command at a time.
void sql_poll_upstream::run_query(value_fn done) {
  waiting_.push_back(std::move(done));
  if (querying_) return;
  querying_ = true;
  auto finish = [this, alive = alive_](const std::string& error, const std::optional<std::string>& v) {
    if (!*alive) return;
    querying_ = false;
    if (error.empty()) {
      known_ = true;
      value_ = v;
    } else if (conn_) {
      // A failed query may leave the connection in any state: the next one connects anew.
      conn_->close();
      connected_ = false;
    }
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& w : waiting) {
      w(error, v);
      if (!*alive) return;  // a callback closed this upstream
    }
  };
  const auto& sql = *resource_.sql;
  if (connected_) return conn_->query_scalar(sql.query, std::move(finish), sql.params);
  conn_ = std::make_unique<postgres::postgres_connection>(ioc_);
  conn_->connect(sql.conninfo, postgres::libpq_tls_keywords(sql.tls), sql.timeout,
                 [this, alive = alive_, finish = std::move(finish)](const std::string& error) mutable {
                   if (!*alive) return;
                   if (!error.empty()) return finish("cannot connect: " + error, std::nullopt);
                   connected_ = true;
                   conn_->query_scalar(resource_.sql->query, std::move(finish), resource_.sql->params);
                 });
}

void sql_poll_upstream::subscribe(handlers h) {
  handlers_ = std::move(h);
  run_query([this](const std::string& error, const std::optional<std::string>& v) {
    if (!error.empty()) {
      if (handlers_.ended) handlers_.ended(resource_.uri + ": " + error);
      return;
    }
    announced_ = v;
    if (handlers_.subscribed) handlers_.subscribed();
    arm();
  });
}

void sql_poll_upstream::arm() {
  timer_.expires_after(resource_.interval);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    tick();
  });
}

void sql_poll_upstream::tick() {
  run_query([this](const std::string& error, const std::optional<std::string>& v) {
    if (!error.empty()) {
      logging::warn("source.sql_poll_failed", {{"uri", resource_.uri}, {"error", error}});
      if (handlers_.degraded) handlers_.degraded(resource_.uri + ": " + error);
    } else if (v != announced_) {
      announced_ = v;
      if (handlers_.updated) handlers_.updated();
    }
    arm();
  });
}

read_result sql_poll_upstream::state() const {
  nlohmann::json body = {{"value", value_ ? nlohmann::json(*value_) : nlohmann::json()}};
  // A database in another encoding than UTF-8 may hand over bytes JSON cannot hold.
  return {"application/json", body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

void sql_poll_upstream::read(std::function<void(read_outcome)> done) {
  if (resource_.backend) {
    // The value only says that the resource changed; the backend says how.
    reading_ = read_backend(ioc_, resource_, [alive = alive_, done = std::move(done)](read_outcome r) {
      if (*alive) done(std::move(r));
    });
    return;
  }
  // After the first query the read is the value the last update was announced for.
  if (known_) return done(read_outcome::ok(state()));
  run_query([this, done = std::move(done)](const std::string& error, const std::optional<std::string>&) {
    done(error.empty() ? read_outcome::ok(state()) : read_outcome::failed(resource_.uri + ": " + error));
  });
}

void sql_poll_upstream::close() {
  if (!*alive_) return;
  *alive_ = false;
  handlers_ = {};
  waiting_.clear();
  timer_.cancel();
  if (reading_) reading_->cancel();
  reading_.reset();
  if (conn_) conn_->close();
}

}  // namespace tidings::sources::web
