#include "sources/catalog.hpp"

#include <algorithm>

#include <boost/asio/steady_timer.hpp>

#include "core/resource_routing.hpp"
#include "logging/log.hpp"

namespace tidings::sources {
namespace {

// A connector that has not answered its start by then is taken as failed,
// so one hung upstream cannot hold up routing for the others.
constexpr std::chrono::seconds start_deadline{20};
// A connector whose start failed is tried again on use, but not more often.
constexpr std::chrono::seconds retry_after{5};

}  // namespace

catalog::catalog(boost::asio::io_context& ioc, std::vector<std::unique_ptr<connector>> connectors)
    : ioc_(ioc) {
  for (auto& c : connectors) {
    auto s = std::make_unique<slot>();
    s->conn = std::move(c);
    connectors_.push_back(std::move(s));
  }
}

catalog::~catalog() {
  stop();
}

void catalog::release_waiting() {
  if (starting_ > 0) return;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& w : waiting) w();
}

void catalog::finish_start(slot& s, std::uint64_t attempt, std::string error) {
  if (stopped_ || attempt != s.attempt || s.at != slot::phase::starting) return;
  s.error = error;
  s.at = error.empty() ? slot::phase::started : slot::phase::failed;
  if (!error.empty()) {
    s.failed_at = std::chrono::steady_clock::now();
    logging::warn("source.upstream_unavailable", {{"upstream", s.conn->name()}, {"error", error}});
  } else {
    logging::info("source.upstream_started", {{"upstream", s.conn->name()}});
  }
  --starting_;
  release_waiting();
}

void catalog::ensure_started(std::function<void()> done) {
  if (stopped_) return done();
  waiting_.push_back(std::move(done));
  // Held while starting, so a connector answering at once cannot release
  // the waiters before the others have begun.
  ++starting_;
  auto now = std::chrono::steady_clock::now();
  for (auto& sp : connectors_) {
    auto& s = *sp;
    if (s.at == slot::phase::started || s.at == slot::phase::starting) continue;
    if (s.at == slot::phase::failed && now - s.failed_at < retry_after) continue;
    s.at = slot::phase::starting;
    ++starting_;
    auto attempt = ++s.attempt;
    auto* target = &s;
    auto timer = std::make_shared<boost::asio::steady_timer>(ioc_, start_deadline);
    timer->async_wait([this, target, attempt, timer](const boost::system::error_code& ec) {
      if (ec) return;
      finish_start(*target, attempt, "did not start within " + std::to_string(start_deadline.count()) + " s");
    });
    s.conn->start([this, target, attempt, timer](std::string error) {
      timer->cancel();
      finish_start(*target, attempt, std::move(error));
    });
  }
  --starting_;
  release_waiting();
}

route_result catalog::route(std::string_view uri) const {
  std::vector<core::upstream_listing> listings;
  std::vector<const slot*> started;
  bool some_down = false;
  for (const auto& sp : connectors_) {
    const auto& s = *sp;
    if (s.at != slot::phase::started) {
      some_down = true;
      continue;
    }
    core::upstream_listing l;
    l.name = s.conn->name();
    for (const auto& r : s.conn->resources()) (r.template_ ? l.templates : l.exact_uris).push_back(r.uri);
    l.accepts_any = s.conn->accepts_any_uri();
    listings.push_back(std::move(l));
    started.push_back(&s);
  }
  route_result out;
  auto r = core::route_resource(uri, listings);
  if (!r) {
    out.error = "no upstream serves " + std::string(uri);
    for (const auto& e : start_errors()) out.error += "; " + e;
    if (connectors_.empty()) out.error += " (no upstreams are configured)";
    // An upstream that is down might have served it: try again later.
    out.transient = some_down;
    return out;
  }
  out.upstream = started[r->index]->conn.get();
  out.uri = out.upstream->canonical(uri);
  out.key = out.upstream->name() + "|" + out.uri;
  return out;
}

std::vector<resource_info> catalog::resources() const {
  std::vector<resource_info> out;
  for (const auto& sp : connectors_) {
    if (sp->at != slot::phase::started) continue;
    auto list = sp->conn->resources();
    out.insert(out.end(), list.begin(), list.end());
  }
  return out;
}

std::vector<std::string> catalog::start_errors() const {
  std::vector<std::string> out;
  for (const auto& sp : connectors_)
    if (sp->at == slot::phase::failed) out.push_back(sp->conn->name() + " is unavailable: " + sp->error);
  return out;
}

connector* catalog::find(std::string_view name) const {
  for (const auto& sp : connectors_)
    if (sp->conn->name() == name) return sp->conn.get();
  return nullptr;
}

std::vector<std::unique_ptr<connector>> catalog::reconfigure(const std::vector<std::string>& order,
                                                             std::vector<std::unique_ptr<connector>> fresh) {
  std::vector<std::unique_ptr<connector>> out;
  if (stopped_) return out;
  auto rank = [&order](const std::string& name) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), name) - order.begin());
  };
  auto replaced = [&fresh](const std::string& name) {
    return std::any_of(fresh.begin(), fresh.end(), [&](const auto& c) { return c->name() == name; });
  };
  std::vector<std::unique_ptr<slot>> kept;
  for (auto& sp : connectors_) {
    const auto& name = sp->conn->name();
    if (rank(name) < order.size() && !replaced(name)) {
      kept.push_back(std::move(sp));
      continue;
    }
    // Its start in flight no longer holds up routing; a late answer (or
    // the start timer) finds a newer attempt and is ignored.
    if (sp->at == slot::phase::starting) --starting_;
    ++sp->attempt;
    sp->at = slot::phase::failed;
    out.push_back(std::move(sp->conn));
    retired_.push_back(std::move(sp));
  }
  for (auto& c : fresh) {
    auto s = std::make_unique<slot>();
    s->conn = std::move(c);
    kept.push_back(std::move(s));
  }
  std::stable_sort(kept.begin(), kept.end(), [&rank](const auto& a, const auto& b) {
    return rank(a->conn->name()) < rank(b->conn->name());
  });
  connectors_ = std::move(kept);
  release_waiting();
  return out;
}

void catalog::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& sp : connectors_) sp->conn->stop();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  // Callers still waiting get an answer (route() then finds nothing started).
  for (auto& s : connectors_) s->at = slot::phase::failed;
  for (auto& w : waiting) w();
}

}  // namespace tidings::sources
