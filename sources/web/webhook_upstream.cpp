#include "sources/web/webhook_upstream.hpp"

#include <chrono>

#include "core/read_extraction.hpp"
#include "sources/web/backend_read.hpp"

namespace tidings::sources::web {
namespace {

// Enough that a burst between two reads is not cut; a longer one shows as a GAP.
constexpr std::size_t max_fires_kept = 256;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

webhook_upstream::webhook_upstream(boost::asio::io_context& ioc, const web_resource_config& resource,
                                   std::function<void()> on_close)
    : ioc_(ioc), resource_(resource), on_close_(std::move(on_close)) {}

webhook_upstream::~webhook_upstream() {
  close();
}

void webhook_upstream::subscribe(handlers h) {
  handlers_ = std::move(h);
  // Nothing to set up upstream: the sender calls us.
  if (handlers_.subscribed) handlers_.subscribed();
}

void webhook_upstream::fire() {
  if (closed_) return;
  if (!resource_.backend) {
    // key "": the whole resource changed (its default line is just CHANGED).
    fires_.push_back({{"seq", next_seq_++}, {"type", "CHANGED"}, {"key", ""}, {"fired_ms", now_ms()}});
    if (fires_.size() > max_fires_kept) fires_.pop_front();
  }
  if (handlers_.updated) handlers_.updated();
}

void webhook_upstream::read(std::function<void(read_outcome)> done) {
  if (closed_) return;
  if (!resource_.backend) {
    nlohmann::json body = {{"events", nlohmann::json::array()}};
    for (const auto& f : fires_) body["events"].push_back(f);
    return done(read_outcome::ok({std::string(core::event_log_mime_type), body.dump()}));
  }
  reading_ = read_backend(ioc_, resource_, std::move(done));
}

void webhook_upstream::close() {
  if (closed_) return;
  closed_ = true;
  handlers_ = {};
  if (reading_) reading_->cancel();
  reading_.reset();
  if (on_close_) on_close_();
}

}  // namespace tidings::sources::web
