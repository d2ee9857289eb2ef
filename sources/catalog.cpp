#include "sources/catalog.hpp"

#include "core/resource_routing.hpp"
#include "logging/log.hpp"

namespace tidings::sources {

catalog::catalog(std::vector<std::unique_ptr<connector>> connectors) {
  for (auto& c : connectors) {
    slot s;
    s.conn = std::move(c);
    connectors_.push_back(std::move(s));
  }
}

catalog::~catalog() { stop(); }

void catalog::ensure_started(std::function<void()> done) {
  if (stopped_) return done();
  waiting_.push_back(std::move(done));
  for (auto& s : connectors_) {
    if (s.at == slot::phase::started || s.at == slot::phase::starting) continue;
    s.at = slot::phase::starting;
    ++starting_;
    auto* target = &s;
    s.conn->start([this, target](std::string error) {
      if (stopped_) return;
      target->error = error;
      target->at = error.empty() ? slot::phase::started : slot::phase::failed;
      if (!error.empty())
        logging::warn("source.upstream_unavailable", {{"upstream", target->conn->name()}, {"error", error}});
      else
        logging::info("source.upstream_started", {{"upstream", target->conn->name()}});
      if (--starting_ > 0) return;
      auto waiting = std::move(waiting_);
      waiting_.clear();
      for (auto& w : waiting) w();
    });
  }
  if (starting_ == 0) {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& w : waiting) w();
  }
}

route_result catalog::route(std::string_view uri) const {
  std::vector<core::upstream_listing> listings;
  std::vector<const slot*> started;
  for (const auto& s : connectors_) {
    if (s.at != slot::phase::started) continue;
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
    auto errors = start_errors();
    for (const auto& e : errors) out.error += "; " + e;
    if (connectors_.empty()) out.error += " (no upstreams are configured)";
    return out;
  }
  out.upstream = started[r->index]->conn.get();
  out.uri = out.upstream->canonical(uri);
  out.key = out.upstream->name() + "|" + out.uri;
  return out;
}

std::vector<resource_info> catalog::resources() const {
  std::vector<resource_info> out;
  for (const auto& s : connectors_) {
    if (s.at != slot::phase::started) continue;
    auto list = s.conn->resources();
    out.insert(out.end(), list.begin(), list.end());
  }
  return out;
}

std::vector<std::string> catalog::start_errors() const {
  std::vector<std::string> out;
  for (const auto& s : connectors_)
    if (s.at == slot::phase::failed) out.push_back(s.conn->name() + " is unavailable: " + s.error);
  return out;
}

connector* catalog::find(std::string_view name) const {
  for (const auto& s : connectors_)
    if (s.conn->name() == name) return s.conn.get();
  return nullptr;
}

void catalog::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& s : connectors_) s.conn->stop();
  waiting_.clear();
}

}  // namespace tidings::sources
