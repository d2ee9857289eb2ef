#include "sources/mcp/mcp_upstream.hpp"

namespace tidings::sources::mcp {

void mcp_upstream::subscribe(handlers h) {
  if (!*alive_) return;
  // A restart after `ended`: the old watch is gone already; unwatch is a no-op then.
  if (watch_ != 0) session_->unwatch(watch_);
  std::weak_ptr<bool> alive = alive_;
  mcp_session::watch_handlers wh;
  wh.subscribed = [alive, f = h.subscribed]() {
    auto a = alive.lock();
    if (a && *a && f) f();
  };
  wh.updated = [alive, f = h.updated]() {
    auto a = alive.lock();
    if (a && *a && f) f();
  };
  // Either end leaves no watch; `gone` falls back to `ended` (upstream.hpp).
  auto last = [this, alive](std::function<void(std::string)> f) {
    return [this, alive, f = std::move(f)](std::string why) {
      auto a = alive.lock();
      if (!a || !*a) return;
      watch_ = 0;
      if (f) f(std::move(why));
    };
  };
  wh.ended = last(h.ended);
  wh.gone = last(h.gone ? h.gone : h.ended);
  watch_ = session_->watch(uri_, std::move(wh));
}

void mcp_upstream::read(std::function<void(read_outcome)> done) {
  std::weak_ptr<bool> alive = alive_;
  session_->read(uri_, [alive, done = std::move(done)](read_outcome r) {
    auto a = alive.lock();
    if (a && *a) done(std::move(r));
  });
}

void mcp_upstream::close() {
  if (!*alive_) return;
  *alive_ = false;
  alive_ = std::make_shared<bool>(false);
  if (watch_ != 0) session_->unwatch(watch_);
  watch_ = 0;
}

}  // namespace tidings::sources::mcp
