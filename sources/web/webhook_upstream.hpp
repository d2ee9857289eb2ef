#pragma once

// A resource whose upstream calls POST /webhooks/resource-updated/{token}.
// Each fire is an update. With a backend the read is the backend's body
// (diffed as state); without one, each fire is an event of its own in a
// small event log, so it comes out as one CHANGED event.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

class webhook_upstream final : public upstream {
 public:
  const char* strategy() const override { return "webhook"; }
  bool tls_unverified() const override { return resource_.tls_unverified(); }
  // `on_close` unregisters it from the connector's table of live upstreams.
  webhook_upstream(boost::asio::io_context& ioc, const web_resource_config& resource,
                   std::function<void()> on_close);
  ~webhook_upstream() override;

  void subscribe(handlers h) override;
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

  // The token matched: the resource changed upstream.
  void fire();

 private:
  boost::asio::io_context& ioc_;
  const web_resource_config resource_;  // its own copy: a template's instance lives nowhere else
  std::function<void()> on_close_;
  handlers handlers_;
  std::shared_ptr<net::http_call> reading_;
  std::deque<nlohmann::json> fires_;  // without a backend: the newest fires, by seq
  std::uint64_t next_seq_ = 1;
  bool closed_ = false;
};

}  // namespace tidings::sources::web
