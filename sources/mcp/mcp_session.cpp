#include "sources/mcp/mcp_session.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "logging/log.hpp"
#include "sources/mcp/http_transport.hpp"
#include "sources/mcp/stdio_transport.hpp"

namespace tidings::sources::mcp {

using nlohmann::json;

namespace {

constexpr int max_list_pages = 100;
// Removed URIs remembered at most (a server churning through resources
// must not grow the set without bound; forgetting one only means its
// watch is not refused up front).
constexpr std::size_t max_removed = 4096;
constexpr const char* subscription_id_key = "io.modelcontextprotocol/subscriptionId";

const json* subscription_id(const json& params) {
  if (!params.is_object()) return nullptr;
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return nullptr;
  auto sid = meta->find(subscription_id_key);
  return sid == meta->end() ? nullptr : &*sid;
}

std::string string_param(const json& params, const char* key) {
  if (!params.is_object()) return {};
  auto it = params.find(key);
  return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

mcp_session::mcp_session(boost::asio::io_context& ioc, mcp_config cfg)
    : ioc_(ioc), cfg_(std::move(cfg)), rpc_(ioc) {
  rpc_.on_timeout([this](const json& id, const std::string& method) {
    // Stop the server's work on it (stdio: notifications/cancelled, HTTP:
    // close the stream). The probe and the handshake are never cancelled.
    if (method == "server/discover" || method == "initialize" || !transport_) return;
    transport_->cancel_request(id, "timed out");
  });
}

mcp_session::~mcp_session() {
  stop();
}

pid_t mcp_session::child_pid() const {
  auto* stdio = dynamic_cast<stdio_transport*>(transport_.get());
  return stdio ? stdio->pid() : -1;
}

void mcp_session::connect(done_fn done) {
  if (state_ == state::ready) {
    std::weak_ptr<mcp_session> weak = weak_from_this();
    boost::asio::post(ioc_, [weak, done = std::move(done), gen = generation_]() {
      auto self = weak.lock();
      if (!self || self->generation_ != gen) return;
      done(self->state_ == state::ready ? std::string() : self->cfg_.name + ": connection lost");
    });
    return;
  }
  waiters_.push_back(std::move(done));
  if (state_ == state::idle) begin_connect();
}

void mcp_session::begin_connect() {
  state_ = state::connecting;
  ++generation_;
  capabilities_ = json::object();
  version_.clear();
  if (cfg_.transport == transport_kind::stdio) {
    transport_ = std::make_shared<stdio_transport>(ioc_, cfg_);
  } else {
    transport_ = std::make_shared<http_transport>(ioc_, cfg_);
  }
  std::weak_ptr<mcp_session> weak = weak_from_this();
  std::uint64_t gen = generation_;
  auto alive = [weak, gen]() -> std::shared_ptr<mcp_session> {
    auto self = weak.lock();
    return self && self->generation_ == gen ? self : nullptr;
  };
  transport::handlers h;
  h.message = [alive](const json& j) {
    if (auto self = alive()) self->on_message(j);
  };
  h.request_failed = [alive](const json& id, failure_kind kind, std::string error) {
    if (auto self = alive()) self->rpc_.fail(id, kind, std::move(error));
  };
  h.closed = [alive](const std::string& reason) {
    if (auto self = alive()) self->on_closed(reason);
  };
  transport_->open(std::move(h), [alive](const std::string& error) {
    auto self = alive();
    if (!self) return;
    if (!error.empty()) {
      self->finish_connect(self->cfg_.name + ": " + error);
      return;
    }
    self->probe();
  });
}

void mcp_session::probe() {
  // A legacy server may never answer an unknown method before initialize:
  // the probe waits less than a normal request.
  auto timeout = std::min(cfg_.request_timeout, std::chrono::milliseconds(10000));
  std::weak_ptr<mcp_session> weak = weak_from_this();
  std::uint64_t gen = generation_;
  send("server/discover", json::object(), timeout, false, rpc_.next_id(), [weak, gen](const rpc_reply& r) {
    auto self = weak.lock();
    if (self && self->generation_ == gen) self->on_probe(r);
  });
}

void mcp_session::on_probe(const rpc_reply& r) {
  protocol_choice c = choose_protocol(r);
  if (!c.error.empty()) {
    finish_connect(cfg_.name + ": " + c.error);
    return;
  }
  if (c.chosen == era::modern) {
    era_ = era::modern;
    version_ = c.version;
    capabilities_ = c.capabilities.is_object() ? c.capabilities : json::object();
    transport_->set_protocol(era::modern, version_);
    finish_connect("");
    return;
  }
  logging::info("mcp.session.legacy", {{"server", cfg_.name}, {"probe", r.describe()}});
  initialize(c.version);
}

void mcp_session::initialize(const std::string& version) {
  era_ = era::legacy;
  transport_->set_protocol(era::legacy, "");
  json params = {{"protocolVersion", version},
                 {"capabilities", json::object()},
                 {"clientInfo", {{"name", client_name}, {"version", client_version}}}};
  std::weak_ptr<mcp_session> weak = weak_from_this();
  std::uint64_t gen = generation_;
  send(
      "initialize", std::move(params), cfg_.request_timeout, false, rpc_.next_id(), [weak, gen](rpc_reply r) {
        auto self = weak.lock();
        if (!self || self->generation_ != gen) return;
        if (!r.ok()) {
          self->finish_connect(failure_text(self->cfg_.name, "initialize", r));
          return;
        }
        std::string v = r.result.is_object() && r.result.contains("protocolVersion") &&
                                r.result["protocolVersion"].is_string()
                            ? r.result["protocolVersion"].get<std::string>()
                            : std::string(legacy_version);
        self->version_ = v;
        if (r.result.is_object() && r.result.contains("capabilities") && r.result["capabilities"].is_object())
          self->capabilities_ = r.result["capabilities"];
        self->transport_->set_protocol(era::legacy, v);
        self->transport_->send_notification(make_notification("notifications/initialized", nullptr));
        self->transport_->initialized();
        self->finish_connect("");
      });
}

void mcp_session::finish_connect(const std::string& error) {
  if (error.empty()) {
    state_ = state::ready;
    logging::info("mcp.session.connected", {{"server", cfg_.name},
                                            {"era", era_ == era::modern ? "modern" : "legacy"},
                                            {"version", version_},
                                            {"subscribe", can_subscribe()}});
    // A reconnection: the listing may have changed while nobody could say so.
    if (!listing_.empty()) refresh_listing();
  } else {
    logging::warn("mcp.session.connect_failed", {{"server", cfg_.name}, {"error", error}});
    state_ = state::idle;
    ++generation_;
    rpc_.fail_all(error);
    if (transport_) transport_->close();
    transport_.reset();
  }
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& w : waiters) w(error);
}

void mcp_session::send(const std::string& method, json params, std::chrono::milliseconds timeout,
                       bool long_lived, const json& id, std::function<void(rpc_reply)> done) {
  if (!transport_) {
    std::weak_ptr<mcp_session> weak = weak_from_this();
    std::string text = cfg_.name + ": not connected";
    boost::asio::post(ioc_, [weak, done = std::move(done), text]() {
      if (weak.lock()) done(rpc_reply::failed(failure_kind::transport, text));
    });
    return;
  }
  request_info info;
  info.method = method;
  info.name = string_param(params, "name");
  if (info.name.empty()) info.name = string_param(params, "uri");
  info.long_lived = long_lived;
  // Modern: every request carries the `_meta` envelope, the probe included.
  if (era_ == era::modern || method == "server/discover") params = with_meta(std::move(params));
  rpc_.expect(id, method, timeout, std::move(done));
  transport_->send_request(make_request(id, method, std::move(params)), info);
}

void mcp_session::request(const std::string& method, json params, std::function<void(rpc_reply)> done) {
  send(method, std::move(params), cfg_.request_timeout, false, rpc_.next_id(), std::move(done));
}

void mcp_session::on_message(const json& j) {
  rpc_message m = classify_message(j);
  switch (m.kind) {
    case message_kind::invalid:
      logging::warn("mcp.message.invalid", {{"server", cfg_.name}, {"problem", m.problem}});
      return;
    case message_kind::response:
      if (!rpc_.on_response(m))
        logging::debug("mcp.response.unmatched", {{"server", cfg_.name}, {"id", id_key(m.id)}});
      return;
    case message_kind::notification:
      on_notification(m);
      return;
    case message_kind::request:
      on_server_request(m);
      return;
  }
}

void mcp_session::on_notification(const rpc_message& m) {
  if (observer_) observer_(m.method, m.params);
  if (m.method == "notifications/resources/list_changed") {
    // Legacy: unsolicited; modern: on any of our listen streams.
    refresh_listing();
    return;
  }
  const json* sid = subscription_id(m.params);
  if (m.method == "notifications/subscriptions/acknowledged") {
    if (!sid) return;
    auto it = by_listen_id_.find(id_key(*sid));
    if (it == by_listen_id_.end()) return;
    watch_id id = it->second;
    watch_state* w = find_watch(id);
    if (!w || w->active) return;
    // The acknowledged filter is what the server agreed to honour.
    bool honoured = false;
    if (m.params.contains("notifications") && m.params["notifications"].is_object()) {
      const json& n = m.params["notifications"];
      if (n.contains("resourceSubscriptions") && n["resourceSubscriptions"].is_array())
        for (const auto& u : n["resourceSubscriptions"])
          if (u.is_string() && u.get<std::string>() == w->uri) honoured = true;
    }
    if (!honoured) {
      end_watch(id, cfg_.name + ": the server did not acknowledge the subscription to " + w->uri, true);
      return;
    }
    w->active = true;
    if (w->ack_timer) w->ack_timer->cancel();
    auto f = w->h.subscribed;
    if (f) f();
    return;
  }
  if (m.method == "notifications/resources/updated") {
    std::string uri = string_param(m.params, "uri");
    if (sid) {
      auto it = by_listen_id_.find(id_key(*sid));
      if (it == by_listen_id_.end()) return;
      watch_state* w = find_watch(it->second);
      if (!w || !w->active) return;  // nothing may precede the acknowledgment
      auto f = w->h.updated;
      if (f) f();
      return;
    }
    if (era_ != era::legacy) return;
    std::vector<std::function<void()>> calls;
    for (auto& [_, w] : watches_)
      if (w.active && w.uri == uri && w.h.updated) calls.push_back(w.h.updated);
    for (auto& f : calls) f();
    return;
  }
  if (m.method == "notifications/cancelled") {
    // A server tearing down a subscriptions/listen stream names its id.
    if (!m.params.is_object() || !m.params.contains("requestId")) return;
    auto it = by_listen_id_.find(id_key(m.params["requestId"]));
    if (it == by_listen_id_.end()) return;
    std::string reason = string_param(m.params, "reason");
    end_watch(it->second,
              cfg_.name + ": the server cancelled the subscription" +
                  (reason.empty() ? std::string() : ": " + reason),
              false);
    return;
  }
  // notifications/message, tools/list_changed, progress, ...: not used.
  logging::debug("mcp.notification.ignored", {{"server", cfg_.name}, {"method", m.method}});
}

void mcp_session::on_server_request(const rpc_message& m) {
  // Only legacy servers may send requests (modern ones embed them in
  // results). Answer so they do not wait: ping succeeds, the rest is unknown.
  if (!transport_ || era_ != era::legacy) return;
  json reply = {{"jsonrpc", "2.0"}, {"id", m.id}};
  if (m.method == "ping") {
    reply["result"] = json::object();
  } else {
    reply["error"] = {{"code", -32601}, {"message", "Method not found"}};
  }
  transport_->send_notification(reply);
}

void mcp_session::on_closed(const std::string& reason) {
  logging::warn("mcp.session.closed", {{"server", cfg_.name}, {"reason", reason}});
  std::string text = cfg_.name + ": connection lost: " + reason;
  bool was_connecting = state_ == state::connecting;
  state_ = state::idle;
  ++generation_;
  auto t = std::move(transport_);
  transport_.reset();
  if (t) t->close();
  legacy_refs_.clear();
  // Every watch of this connection ends with the connection's reason (not
  // as a failed listen request), after the other pending requests failed,
  // so a watch restarted from its `ended` handler starts on a clean slate.
  std::vector<watch_id> ids;
  for (auto& [id, w] : watches_) {
    if (!w.started) continue;
    ids.push_back(id);
    if (!w.listen_id.is_null()) rpc_.forget(w.listen_id);
  }
  rpc_.fail_all(text);
  for (auto id : ids) end_watch(id, text, false);
  if (was_connecting) {
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters) w(text);
  }
}

mcp_session::watch_state* mcp_session::find_watch(watch_id id) {
  auto it = watches_.find(id);
  return it == watches_.end() ? nullptr : &it->second;
}

mcp_session::watch_id mcp_session::watch(const std::string& uri, watch_handlers h) {
  watch_id id = next_watch_++;
  watch_state w;
  w.uri = uri;
  w.h = std::move(h);
  watches_.emplace(id, std::move(w));
  std::weak_ptr<mcp_session> weak = weak_from_this();
  connect([weak, id](const std::string& error) {
    auto self = weak.lock();
    if (!self || !self->find_watch(id)) return;
    if (!error.empty()) {
      self->end_watch(id, error, false);
      return;
    }
    self->start_watch(id);
  });
  return id;
}

void mcp_session::start_watch(watch_id id) {
  watch_state* w = find_watch(id);
  if (!w) return;
  w->started = true;
  if (watched_.size() >= max_removed) watched_.clear();
  watched_.insert(w->uri);
  if (removed_.contains(w->uri) && !lists(listing_, w->uri)) {
    // Removed once: list again before refusing (a modern server says
    // list_changed only on a listen stream, so it may be listed again
    // without our hearing of it).
    std::weak_ptr<mcp_session> weak = weak_from_this();
    fetch_listing([weak, id](std::vector<resource_info> next, const std::string& error) {
      auto self = weak.lock();
      if (!self) return;
      if (error.empty() && advertises_resources(self->capabilities_)) self->apply_listing(std::move(next));
      watch_state* w = self->find_watch(id);
      if (!w) return;
      if (self->removed_.contains(w->uri) && !lists(self->listing_, w->uri)) return self->end_watch_gone(id);
      self->subscribe_watch(id);
    });
    return;
  }
  subscribe_watch(id);
}

void mcp_session::subscribe_watch(watch_id id) {
  watch_state* w = find_watch(id);
  if (!w) return;
  if (!can_subscribe()) {
    end_watch(id,
              cfg_.name + ": the server does not advertise resources.subscribe, so " + w->uri +
                  " cannot be watched",
              false);
    return;
  }
  if (era_ == era::modern) {
    start_listen(id);
    return;
  }
  std::weak_ptr<mcp_session> weak = weak_from_this();
  std::uint64_t gen = generation_;
  std::string uri = w->uri;
  request("resources/subscribe", {{"uri", uri}}, [weak, gen, id, uri](const rpc_reply& r) {
    auto self = weak.lock();
    if (!self) return;
    watch_state* w = self->find_watch(id);
    if (!w) {
      // Unwatched meanwhile: undo, unless no other watch wants the URI.
      if (r.ok() && self->generation_ == gen && !self->legacy_refs_.count(uri))
        self->request("resources/unsubscribe", {{"uri", uri}}, [](const rpc_reply&) {});
      return;
    }
    if (!r.ok()) {
      self->end_watch(id, failure_text(self->cfg_.name, "resources/subscribe " + uri, r), false);
      return;
    }
    w->active = true;
    ++self->legacy_refs_[uri];
    auto f = w->h.subscribed;
    if (f) f();
  });
}

void mcp_session::start_listen(watch_id id) {
  watch_state* w = find_watch(id);
  json listen_id = rpc_.next_id();
  w->listen_id = listen_id;
  by_listen_id_[id_key(listen_id)] = id;
  std::weak_ptr<mcp_session> weak = weak_from_this();
  // The acknowledgment must come within the request timeout; the stream
  // itself has none.
  w->ack_timer = std::make_unique<boost::asio::steady_timer>(ioc_, cfg_.request_timeout);
  w->ack_timer->async_wait([weak, id](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    watch_state* w = self->find_watch(id);
    if (!w || w->active) return;
    self->end_watch(
        id, self->cfg_.name + ": subscriptions/listen for " + w->uri + " was not acknowledged in time", true);
  });
  json notifications = {{"resourceSubscriptions", json::array({w->uri})}};
  // Every listen opts in, so the listing is followed while anything is watched.
  if (advertises_list_changed(capabilities_)) notifications["resourcesListChanged"] = true;
  json params = {{"notifications", std::move(notifications)}};
  send("subscriptions/listen", std::move(params), std::chrono::milliseconds(0), true, listen_id,
       [weak, id](rpc_reply r) {
         auto self = weak.lock();
         if (!self || !self->find_watch(id)) return;
         std::string uri = self->find_watch(id)->uri;
         if (!r.ok()) {
           self->end_watch(id, failure_text(self->cfg_.name, "subscriptions/listen " + uri, r), false);
           return;
         }
         // The response to a listen is its end: `complete` is a clean end.
         std::string type =
             r.result.is_object() && r.result.contains("resultType") && r.result["resultType"].is_string()
                 ? r.result["resultType"].get<std::string>()
                 : std::string();
         self->end_watch(id,
                         self->cfg_.name + ": the server ended the subscription to " + uri +
                             (type == "complete" ? std::string(" (complete)") : " (resultType " + type + ")"),
                         false);
       });
}

std::optional<mcp_session::watch_state> mcp_session::detach_watch(watch_id id, bool cancel_upstream,
                                                                  const char* why) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return std::nullopt;
  watch_state w = std::move(it->second);
  watches_.erase(it);
  if (w.ack_timer) w.ack_timer->cancel();
  if (!w.listen_id.is_null()) {
    by_listen_id_.erase(id_key(w.listen_id));
    if (rpc_.pending(w.listen_id)) {
      rpc_.forget(w.listen_id);
      if (cancel_upstream && transport_) transport_->cancel_request(w.listen_id, why);
    }
  }
  return w;
}

bool mcp_session::release_legacy_ref(const std::string& uri) {
  auto r = legacy_refs_.find(uri);
  if (r == legacy_refs_.end() || --r->second > 0) return false;
  legacy_refs_.erase(r);
  return true;
}

void mcp_session::end_watch(watch_id id, const std::string& reason, bool cancel_upstream) {
  auto w = detach_watch(id, cancel_upstream, "subscription ended");
  if (!w) return;
  if (w->listen_id.is_null() && w->active) release_legacy_ref(w->uri);
  logging::info("mcp.watch.ended", {{"server", cfg_.name}, {"uri", w->uri}, {"reason", reason}});
  if (w->h.ended) w->h.ended(reason);
}

void mcp_session::unwatch(watch_id id) {
  auto detached = detach_watch(id, true, "unsubscribed");
  if (!detached || !detached->listen_id.is_null() || !detached->active) return;
  auto& w = *detached;
  // The server is told only when the last legacy subscriber of the URI leaves.
  if (!release_legacy_ref(w.uri)) return;
  if (state_ != state::ready) return;
  std::string name = cfg_.name;
  std::string uri = w.uri;
  request("resources/unsubscribe", {{"uri", uri}}, [name, uri](const rpc_reply& r) {
    if (!r.ok())
      logging::warn("mcp.unsubscribe.failed", {{"server", name}, {"uri", uri}, {"error", r.describe()}});
  });
}

void mcp_session::list(std::function<void(std::vector<resource_info>, std::string error)> done) {
  std::weak_ptr<mcp_session> weak = weak_from_this();
  connect([weak, done = std::move(done)](const std::string& error) {
    auto self = weak.lock();
    if (!self) return;
    if (!error.empty()) {
      done({}, error);
      return;
    }
    self->fetch_listing([weak, done](std::vector<resource_info> list, const std::string& error) {
      auto self = weak.lock();
      if (!self) return;
      if (error.empty()) self->listing_ = list;
      done(std::move(list), error);
    });
  });
}

void mcp_session::fetch_listing(
    const std::function<void(std::vector<resource_info>, std::string error)>& done) {
  if (!advertises_resources(capabilities_)) {
    done({}, "");
    return;
  }
  std::weak_ptr<mcp_session> weak = weak_from_this();
  auto out = std::make_shared<std::vector<resource_info>>();
  list_page("resources/list", "", 0, out, [weak, out, done](const std::string& error) {
    auto self = weak.lock();
    if (!self) return;
    if (!error.empty()) {
      done({}, error);
      return;
    }
    self->list_page("resources/templates/list", "", 0, out, [out, done](const std::string& error) {
      done(error.empty() ? std::move(*out) : std::vector<resource_info>{}, error);
    });
  });
}

void mcp_session::refresh_listing() {
  if (state_ != state::ready) return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  if (!advertises_resources(capabilities_)) {
    // Not "no resources": nothing ends on what a server leaves unsaid.
    logging::warn("mcp.listing.refresh_failed",
                  {{"server", cfg_.name}, {"error", "the server no longer advertises resources"}});
    return;
  }
  refreshing_ = true;
  std::weak_ptr<mcp_session> weak = weak_from_this();
  std::uint64_t gen = generation_;
  fetch_listing([weak, gen](std::vector<resource_info> next, const std::string& error) {
    auto self = weak.lock();
    if (!self) return;
    self->refreshing_ = false;
    // The connection went: the next one lists again when it is ready.
    if (self->generation_ != gen) return;
    if (!error.empty()) {
      // The old listing stays; a watch ends only on a listing that was read.
      logging::warn("mcp.listing.refresh_failed", {{"server", self->cfg_.name}, {"error", error}});
    } else {
      self->apply_listing(std::move(next));
    }
    if (std::exchange(self->refresh_again_, false)) self->refresh_listing();
  });
}

void mcp_session::apply_listing(std::vector<resource_info> next) {
  std::vector<watch_id> vanished;
  for (const auto& [id, w] : watches_)
    if (lists(listing_, w.uri) && !lists(next, w.uri)) vanished.push_back(id);
  // Remembered so that a source subscribing again (after a reconnection it
  // ended in, or from its backoff) learns it too, instead of watching what
  // is not there: the resources dropped, and the URIs watched lately that
  // only a dropped template matched.
  for (const auto& r : listing_)
    if (!r.template_ && !lists(next, r.uri)) removed_.insert(r.uri);
  for (const auto& uri : watched_)
    if (lists(listing_, uri) && !lists(next, uri)) removed_.insert(uri);
  logging::info("mcp.listing.changed", {{"server", cfg_.name},
                                        {"resources", static_cast<std::uint64_t>(next.size())},
                                        {"vanished", static_cast<std::uint64_t>(vanished.size())}});
  listing_ = std::move(next);
  std::erase_if(removed_, [this](const std::string& uri) { return lists(listing_, uri); });
  if (removed_.size() > max_removed) removed_.clear();
  for (auto id : vanished) end_watch_gone(id);
}

void mcp_session::end_watch_gone(watch_id id) {
  auto w = detach_watch(id, true, "the resource was removed");
  if (!w) return;
  if (w->listen_id.is_null() && w->active && release_legacy_ref(w->uri) && state_ == state::ready) {
    // Tidy on the server's side too, as unwatch() would be.
    request("resources/unsubscribe", {{"uri", w->uri}}, [](const rpc_reply&) {});
  }
  removed_.insert(w->uri);
  std::string notice = cfg_.name + ": " + w->uri + " was removed: the server no longer lists it";
  logging::info("mcp.watch.gone", {{"server", cfg_.name}, {"uri", w->uri}});
  if (w->h.gone) {
    w->h.gone(notice);
  } else if (w->h.ended) {
    w->h.ended(notice);
  }
}

void mcp_session::list_page(const std::string& method, const std::string& cursor, int pages,
                            const std::shared_ptr<std::vector<resource_info>>& out,
                            const std::function<void(std::string error)>& done) {
  json params = json::object();
  if (!cursor.empty()) params["cursor"] = cursor;
  std::weak_ptr<mcp_session> weak = weak_from_this();
  request(method, std::move(params), [weak, method, pages, out, done](const rpc_reply& r) {
    auto self = weak.lock();
    if (!self) return;
    if (!r.ok()) {
      // Servers without templates answer "method not found": no templates.
      if (method == "resources/templates/list" && r.failure == failure_kind::rpc_error && r.code == -32601) {
        done("");
        return;
      }
      done(failure_text(self->cfg_.name, method, r));
      return;
    }
    bool sub = self->can_subscribe();
    auto items = method == "resources/list" ? parse_resources(r.result, self->cfg_.name, sub)
                                            : parse_templates(r.result, self->cfg_.name, sub);
    out->insert(out->end(), items.begin(), items.end());
    std::string next = string_param(r.result, "nextCursor");
    if (next.empty() || pages + 1 >= max_list_pages) {
      done("");
      return;
    }
    self->list_page(method, next, pages + 1, out, done);
  });
}

void mcp_session::read(const std::string& uri, std::function<void(read_outcome)> done) {
  std::weak_ptr<mcp_session> weak = weak_from_this();
  connect([weak, uri, done = std::move(done)](const std::string& error) {
    auto self = weak.lock();
    if (!self) return;
    if (!error.empty()) {
      done(read_outcome::failed(error));
      return;
    }
    self->request("resources/read", {{"uri", uri}}, [weak, uri, done](const rpc_reply& r) {
      auto self = weak.lock();
      if (!self) return;
      if (!r.ok()) {
        done(read_outcome::failed(failure_text(self->cfg_.name, "resources/read", r)));
        return;
      }
      done(parse_read(r.result, self->cfg_.name, uri));
    });
  });
}

void mcp_session::call_tool(const std::string& name, json arguments, std::function<void(rpc_reply)> done) {
  std::weak_ptr<mcp_session> weak = weak_from_this();
  connect([weak, name, arguments = std::move(arguments),
           done = std::move(done)](const std::string& error) mutable {
    auto self = weak.lock();
    if (!self) return;
    if (!error.empty()) {
      done(rpc_reply::failed(failure_kind::transport, error));
      return;
    }
    if (!arguments.is_object()) arguments = json::object();
    self->request("tools/call", {{"name", name}, {"arguments", std::move(arguments)}}, std::move(done));
  });
}

void mcp_session::stop() {
  ++generation_;
  refreshing_ = false;  // its requests are dropped below, their callbacks with them
  refresh_again_ = false;
  watches_.clear();
  by_listen_id_.clear();
  legacy_refs_.clear();
  waiters_.clear();
  rpc_.clear();
  state_ = state::idle;
  auto t = std::move(transport_);
  transport_.reset();
  if (t) t->close();
}

}  // namespace tidings::sources::mcp
