#include "sources/web/poll_upstream.hpp"

#include "logging/log.hpp"
#include "sources/content_hash.hpp"
#include "sources/web/backend_read.hpp"

namespace tidings::sources::web {

poll_upstream::poll_upstream(boost::asio::io_context& ioc, const web_resource_config& resource)
    : ioc_(ioc), resource_(resource), interval_(resource.interval), timer_(ioc) {}

poll_upstream::~poll_upstream() {
  close();
}

void poll_upstream::subscribe(handlers h) {
  handlers_ = std::move(h);
  if (handlers_.subscribed) handlers_.subscribed();
  arm();
}

void poll_upstream::arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    tick();
  });
}

void poll_upstream::tick() {
  fetching_ = read_backend(ioc_, resource_, [this, alive = alive_](read_outcome r) {
    if (!*alive) return;
    fetching_.reset();
    if (!r.result) {
      ++failed_;
      logging::warn("source.poll_failed",
                    {{"uri", resource_.uri}, {"error", r.error}, {"failed_fetches", failed_}});
      if (handlers_.degraded) handlers_.degraded(r.error);
    } else {
      auto hash = sha256_hex(r.result->text);
      bool changed = !last_hash_.empty() && hash != last_hash_;
      last_hash_ = std::move(hash);
      last_ = std::move(*r.result);
      if (changed && handlers_.updated) handlers_.updated();
    }
    arm();
  });
}

void poll_upstream::read(std::function<void(read_outcome)> done) {
  // After the first fetch the read is what the last good fetch saw: the
  // update was announced for exactly that body.
  if (last_) return done(read_outcome::ok(*last_));
  fetching_ = read_backend(ioc_, resource_, [this, alive = alive_, done = std::move(done)](read_outcome r) {
    if (!*alive) return;
    fetching_.reset();
    if (r.result) {
      last_hash_ = sha256_hex(r.result->text);
      last_ = *r.result;
    }
    done(std::move(r));
  });
}

void poll_upstream::close() {
  if (!*alive_) return;
  *alive_ = false;
  handlers_ = {};
  timer_.cancel();
  if (fetching_) fetching_->cancel();
  fetching_.reset();
}

}  // namespace tidings::sources::web
