#include "sources/postgres/postgres_connector.hpp"

#include <utility>

#include <boost/asio/post.hpp>

#include "core/read_extraction.hpp"
#include "logging/log.hpp"
#include "sources/postgres/postgres_uri.hpp"

namespace tidings::sources::postgres {

postgres_connector::postgres_connector(boost::asio::io_context& io, postgres_config config)
    : io_(io),
      config_(std::make_shared<const postgres_config>(std::move(config))),
      name_("pg:" + config_->name) {}

postgres_connector::~postgres_connector() {
  stop();
}

void postgres_connector::start(std::function<void(std::string error)> done) {
  if (stopped_) return;
  start_waiters_.push_back(std::move(done));
  if (start_waiters_.size() > 1) return;  // one probe answers every waiter
  probe_ = std::make_unique<postgres_connection>(io_);
  probe_->connect(config_->conninfo, libpq_tls_keywords(config_->tls), config_->connect_timeout,
                  [this](const std::string& error) { finish_start(error); });
}

void postgres_connector::finish_start(const std::string& error) {
  // The probe only shows the database is reachable; channels get their own
  // connections. It is dropped on the next start() or stop(), not here,
  // because this runs inside it.
  probe_->close();
  if (error.empty()) {
    logging::info("postgres.connector_started", {{"connector", name_}});
  } else {
    logging::warn("postgres.connector_start_failed",
                  {{"connector", name_}, {"error", std::string_view(error)}});
  }
  auto waiters = std::move(start_waiters_);
  start_waiters_.clear();
  std::weak_ptr<char> alive = alive_;
  for (auto& w : waiters) {
    if (alive.expired()) return;  // a waiter stopped or destroyed the connector
    w(error);
  }
}

std::vector<resource_info> postgres_connector::resources() const {
  resource_info r;
  r.uri = "pg://" + config_->name + "/{channel}";
  r.template_ = true;
  r.name = "PostgreSQL channel (" + config_->name + ")";
  r.example = channel_uri(config_->name, "changes");
  r.description = "NOTIFY payloads on a LISTEN channel of database " + config_->name +
                  " as an event log: one event per notification, the payload parsed as JSON when it is JSON, "
                  "the type from "
                  "its \"type\" field (else NOTIFY), a GAP after a reconnect. The channel is case-sensitive; "
                  "percent-encode "
                  "characters outside letters, digits and -._~.\nExample: " +
                  r.example;
  r.mime_type = std::string(core::event_log_mime_type);
  r.server = name_;
  r.subscribable = true;
  return {std::move(r)};
}

std::string postgres_connector::canonical(std::string_view uri) const {
  auto channel = parse_channel_uri(config_->name, uri, nullptr);
  return channel ? channel_uri(config_->name, *channel) : std::string(uri);
}

std::unique_ptr<upstream> postgres_connector::open(const std::string& uri, std::string* error) {
  std::string why;
  auto channel = parse_channel_uri(config_->name, uri, &why);
  if (!channel) {
    if (error) *error = name_ + ": " + uri + ": " + why;
    return nullptr;
  }
  return std::make_unique<postgres_upstream>(io_, config_, std::move(*channel), upstreams_);
}

void postgres_connector::read(const std::string& uri, std::function<void(read_outcome)> done) {
  if (stopped_) return;
  std::string why;
  auto channel = parse_channel_uri(config_->name, uri, &why);
  read_outcome outcome;
  if (!channel) {
    outcome = read_outcome::failed(name_ + ": " + uri + ": " + why);
  } else {
    std::string text = R"({"events":[]})";
    for (auto* u : *upstreams_) {
      if (u->channel() == *channel) {
        text = u->events_text();
        break;
      }
    }
    outcome = read_outcome::ok({std::string(core::event_log_mime_type), std::move(text)});
  }
  boost::asio::post(io_, [done = std::move(done), outcome = std::move(outcome),
                          alive = std::weak_ptr<char>(alive_)]() mutable {
    if (!alive.expired()) done(std::move(outcome));
  });
}

void postgres_connector::stop() {
  if (stopped_) return;
  stopped_ = true;
  alive_.reset();
  if (probe_) probe_->close();
  start_waiters_.clear();
  // Closing does not unregister (only destruction does), so iterating is safe.
  for (auto* u : *upstreams_) u->close();
}

}  // namespace tidings::sources::postgres
