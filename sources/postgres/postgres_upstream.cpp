#include "sources/postgres/postgres_upstream.hpp"

#include <utility>

#include <boost/asio/post.hpp>

#include "core/read_extraction.hpp"
#include "logging/log.hpp"

namespace tidings::sources::postgres {

postgres_upstream::postgres_upstream(boost::asio::io_context& io,
                                     std::shared_ptr<const postgres_config> config, std::string channel,
                                     std::weak_ptr<upstream_registry> registry)
    : io_(io),
      config_(std::move(config)),
      channel_(std::move(channel)),
      registry_(std::move(registry)),
      connector_name_("pg:" + config_->name),
      ring_(config_->ring_capacity) {
  if (auto r = registry_.lock()) r->insert(this);
}

postgres_upstream::~postgres_upstream() {
  close();
  if (auto r = registry_.lock()) r->erase(this);
}

void postgres_upstream::subscribe(handlers h) {
  if (closed_) return;
  handlers_ = std::move(h);
  if (conn_) conn_->close();  // a subscribe while one is running starts over
  conn_ = std::make_unique<postgres_connection>(io_);
  conn_->connect(config_->conninfo, libpq_tls_keywords(config_->tls), config_->connect_timeout,
                 [this](std::string error) { on_connected(std::move(error)); });
}

void postgres_upstream::on_connected(std::string error) {
  if (!error.empty()) return end(std::move(error));
  std::string quote_error;
  auto quoted = conn_->quote_identifier(channel_, &quote_error);
  if (quoted.empty()) {
    conn_->close();
    return end("cannot quote channel: " + quote_error);
  }
  conn_->execute("LISTEN " + quoted, [this](std::string e) { on_listening(std::move(e)); });
}

void postgres_upstream::on_listening(std::string error) {
  if (!error.empty()) {
    conn_->close();
    return end(std::move(error));
  }
  conn_->watch([this](const std::vector<notification>& batch) { on_notifications(batch); },
               [this](std::string reason) { on_lost(std::move(reason)); });
  bool gap = listened_before_;
  listened_before_ = true;
  if (gap) ring_.append(gap_event(channel_));
  logging::info("postgres.listening",
                {{"connector", connector_name_}, {"channel", channel_}, {"after_loss", gap}});
  // Copies: a handler may close() or destroy this upstream.
  auto h = handlers_;
  std::weak_ptr<char> alive = alive_;
  if (h.subscribed) h.subscribed();
  if (gap && !alive.expired() && h.updated) h.updated();
}

void postgres_upstream::on_notifications(const std::vector<notification>& batch) {
  for (auto& n : batch) ring_.append(notify_event(n.channel, n.payload, config_->path_field));
  auto updated = handlers_.updated;
  if (updated) updated();  // one wake per socket read: coalesced
}

void postgres_upstream::on_lost(std::string reason) {
  logging::warn(
      "postgres.connection_lost",
      {{"connector", connector_name_}, {"channel", channel_}, {"reason", std::string_view(reason)}});
  end(std::move(reason));
}

void postgres_upstream::end(std::string reason) {
  auto ended = std::move(handlers_.ended);
  handlers_ = {};
  if (ended) ended(std::move(reason));
}

void postgres_upstream::read(std::function<void(read_outcome)> done) {
  if (closed_) return;
  // Taken now ("reads the resource now"), delivered from the loop so `done`
  // never runs inside read().
  read_result result{std::string(core::event_log_mime_type), ring_.text()};
  boost::asio::post(io_, [done = std::move(done), result = std::move(result),
                          alive = std::weak_ptr<char>(alive_)]() mutable {
    if (!alive.expired()) done(read_outcome::ok(std::move(result)));
  });
}

void postgres_upstream::close() {
  if (closed_) return;
  closed_ = true;
  alive_.reset();
  handlers_ = {};
  if (conn_) conn_->close();
}

}  // namespace tidings::sources::postgres
