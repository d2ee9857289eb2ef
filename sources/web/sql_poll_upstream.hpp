#pragma once

// sql_polling (seeds/001): runs the resource's scalar tracking query every
// interval (at least the operator's floor) while subscribed, over one libpq
// connection of its own, and announces an update when the value moved. The
// first value is the baseline; subscribing succeeds once it is read, so a
// wrong query or an unreachable database fails the subscription (and the
// source retries) instead of polling nothing. Later failures are reported as
// degraded and the connection is made again at the next tick.
//
// A read with a backend fetches the backend (the value only says "changed");
// without one the state is the value itself, {"value": "..."} (null for SQL
// NULL, e.g. max() of an empty table). A value that moves back (a restored
// backup) counts as a change too: what subscribers hold is stale either way.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::postgres {
class postgres_connection;
}

namespace tidings::sources::web {

class sql_poll_upstream final : public upstream {
 public:
  const char* strategy() const override { return "sql_polling"; }
  bool tls_unverified() const override { return resource_.tls_unverified(); }
  // `resource.interval` as web_connector raised it to the operator's floor.
  sql_poll_upstream(boost::asio::io_context& ioc, const web_resource_config& resource);
  ~sql_poll_upstream() override;

  void subscribe(handlers h) override;
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

 private:
  using value_fn = std::function<void(const std::string& error, const std::optional<std::string>& value)>;
  // Connects when needed, then runs the query; one at a time (`querying_`).
  void run_query(value_fn done);
  void arm();
  void tick();
  read_result state() const;

  boost::asio::io_context& ioc_;
  const web_resource_config resource_;  // its own copy: a template's instance lives nowhere else
  handlers handlers_;
  boost::asio::steady_timer timer_;
  std::unique_ptr<postgres::postgres_connection> conn_;
  bool connected_ = false;
  bool querying_ = false;
  bool known_ = false;                // a value was read
  std::optional<std::string> value_;  // the last value read (nullopt: NULL)
  // The value at subscribe or at the last update announced: a tick compares
  // with it, not with value_, which a read between ticks may have moved.
  std::optional<std::string> announced_;
  std::vector<value_fn> waiting_;            // for the query that runs
  std::shared_ptr<net::http_call> reading_;  // a backend read
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::web
