#pragma once

// nats_topic (seeds/001): any message on the resource's NATS subject means
// the resource changed; the payload is not inspected. One NATS connection
// per subscription through Debian's C client (libnats), which runs its own
// threads and reconnects for ever; what they report is handed to the
// sources thread.
//
// Subscribing connects, subscribes and waits for the server's answer to a
// PING (so the subscription is in place) on a thread of its own, within the
// resource's timeout: an unreachable server or a bad subject fails the
// subscription, and the source retries. A lost connection is reported as
// degraded; when it is back, messages published meanwhile are lost (core
// NATS keeps none), which a GAP says.
//
// Without a backend each message is an event of its own (CHANGED, in a
// small event log, as a webhook fire is), and each reconnect a GAP. With a
// backend the read is the backend's body, diffed as state.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "sources/postgres/postgres_events.hpp"
#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

class nats_upstream final : public upstream {
 public:
  const char* strategy() const override { return "nats_topic"; }
  bool tls_unverified() const override { return resource_.tls_unverified(); }
  nats_upstream(boost::asio::io_context& ioc, const web_resource_config& resource);
  ~nats_upstream() override;

  void subscribe(handlers h) override;
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

  // What libnats' threads hand over (nats_upstream.cpp).
  struct bridge;
  // The subscription is in place: what the connection reports counts from now on.
  bool subscribed() const { return subscribed_; }
  // On the sources thread, from the bridge.
  void on_connected(const std::string& error);
  void on_messages(std::uint64_t count);
  void on_disconnected(const std::string& why);
  void on_reconnected();

 private:
  // Ends the bridge of the last subscribe: its connection is destroyed, and
  // nothing it had on the way reaches this upstream.
  void close_bridge();

  boost::asio::io_context& ioc_;
  const web_resource_config resource_;  // its own copy: a template's instance lives nowhere else
  handlers handlers_;
  std::shared_ptr<bridge> bridge_;
  std::uintptr_t bridge_id_ = 0;  // its number for libnats' callbacks
  std::shared_ptr<net::http_call> reading_;
  postgres::event_ring events_;  // without a backend: the newest, by seq
  bool subscribed_ = false;
  bool closed_ = false;
};

}  // namespace tidings::sources::web
