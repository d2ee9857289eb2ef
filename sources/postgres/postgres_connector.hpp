#pragma once

// The PostgreSQL LISTEN/NOTIFY connector "pg:{name}" (issue 4): serves the
// template pg://{name}/{channel}, one postgres_upstream (and connection) per
// subscribed channel.
//
// start() probes the database once (connect, then disconnect) so a wrong
// connection string or an unreachable server is reported at start. read()
// of a channel needs no subscription: a channel has no state, so it returns
// the event log of this connector's live upstream for that channel when
// there is one, else an empty event log {"events":[]}.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "sources/postgres/postgres_config.hpp"
#include "sources/postgres/postgres_connection.hpp"
#include "sources/postgres/postgres_upstream.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::postgres {

class postgres_connector final : public connector {
 public:
  postgres_connector(boost::asio::io_context& io, postgres_config config);
  ~postgres_connector() override;

  const std::string& name() const override { return name_; }
  void start(std::function<void(std::string error)> done) override;
  std::vector<resource_info> resources() const override;
  std::string canonical(std::string_view uri) const override;
  std::unique_ptr<upstream> open(const std::string& uri, std::string* error) override;
  void read(const std::string& uri, std::function<void(read_outcome)> done) override;
  void stop() override;

 private:
  void finish_start(const std::string& error);

  boost::asio::io_context& io_;
  std::shared_ptr<const postgres_config> config_;
  std::string name_;
  std::unique_ptr<postgres_connection> probe_;
  std::vector<std::function<void(std::string)>> start_waiters_;
  std::shared_ptr<upstream_registry> upstreams_ = std::make_shared<upstream_registry>();
  bool stopped_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace tidings::sources::postgres
