#pragma once

// The explicit opt-in poll (DESIGN.md invariant 1's one exception): GET the
// backend every interval (at least the operator's floor, 10 s by default)
// while subscribed, compare the body's SHA-256 with the last one, and
// announce an update only when it moved. The first fetch is the baseline and
// never notifies; a failed fetch (an error, or a status not accepted) is
// skipped: no baseline change, a counter bumped.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

class poll_upstream final : public upstream {
 public:
  const char* strategy() const override { return "poll"; }
  bool tls_unverified() const override { return resource_.tls_unverified(); }
  // `resource.interval` as web_connector raised it to the operator's floor.
  poll_upstream(boost::asio::io_context& ioc, const web_resource_config& resource);
  ~poll_upstream() override;

  void subscribe(handlers h) override;
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

  std::uint64_t failed_fetches() const { return failed_; }

 private:
  void arm();
  void tick();

  boost::asio::io_context& ioc_;
  const web_resource_config resource_;  // its own copy: a template's instance lives nowhere else
  std::chrono::milliseconds interval_;
  handlers handlers_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<net::http_call> fetching_;
  std::optional<read_result> last_;  // the body the last hash is of
  std::string last_hash_;
  std::uint64_t failed_ = 0;
  // Outlives the object in pending handlers: they check it before touching `this`.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::web
