#pragma once

// One LISTEN channel as an upstream (issue 4): a dedicated libpq connection
// per subscription, NOTIFYs turned into an event log (postgres_events.hpp).
//
//   subscribe: connect -> LISTEN "<channel>" -> subscribed (+ GAP after a loss)
//   NOTIFY batch -> ring -> updated        connection lost -> ended(reason)
//
// A failed connect or LISTEN, or a lost connection, ends the subscription
// with libpq's message (one line); the source backs off and calls
// subscribe() again, which reconnects and LISTENs again. Notifications sent
// while no connection listened are gone, so the first successful subscribe
// after a loss appends a GAP event. The ring and its seq survive reconnects.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>

#include <boost/asio/io_context.hpp>

#include "sources/postgres/postgres_config.hpp"
#include "sources/postgres/postgres_connection.hpp"
#include "sources/postgres/postgres_events.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::postgres {

class postgres_upstream;

// Upstreams a connector opened and that still exist, so its stop() can close
// them and its read() can find them. Each upstream removes itself.
using upstream_registry = std::unordered_set<postgres_upstream*>;

class postgres_upstream final : public upstream {
 public:
  const char* strategy() const override { return "listen"; }
  bool tls_unverified() const override { return config_->tls.insecure_skip_verify; }
  postgres_upstream(boost::asio::io_context& io, std::shared_ptr<const postgres_config> config,
                    std::string channel, std::weak_ptr<upstream_registry> registry = {});
  ~postgres_upstream() override;

  void subscribe(handlers h) override;
  // The ring as {"events":[...]} (core::event_log_mime_type).
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

  const std::string& channel() const { return channel_; }
  // The ring's current text, for the connector's one-off read.
  std::string events_text() const { return ring_.text(); }
  // PID of the listening server backend, 0 when not connected (diagnostics).
  int backend_pid() const { return conn_ ? conn_->backend_pid() : 0; }

 private:
  void on_connected(std::string error);
  void on_listening(std::string error);
  void on_notifications(const std::vector<notification>& batch);
  void on_lost(std::string reason);
  void end(std::string reason);

  boost::asio::io_context& io_;
  std::shared_ptr<const postgres_config> config_;
  std::string channel_;
  std::weak_ptr<upstream_registry> registry_;
  std::string connector_name_;  // for log lines
  handlers handlers_;
  // Replaced on every subscribe; an ended one stays until then, since it may
  // still be on the stack when `ended` runs.
  std::unique_ptr<postgres_connection> conn_;
  event_ring ring_;
  bool listened_before_ = false;  // a later successful LISTEN follows a loss
  bool closed_ = false;
  // Posted read() results hold a weak_ptr: close() or destruction drops them.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace tidings::sources::postgres
