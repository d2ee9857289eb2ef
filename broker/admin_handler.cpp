// The admin API (docs/api.md "Admin"): POST /admin/v1/tokens/revoke,
// /admin/v1/reload and /admin/v1/drain; GET /admin/v1/watches, /streams,
// /sessions, /nodes and /tenants. Every route needs tidings.admin (checked in
// api::route); drain and reload also need an operator (ADR 0011), and the
// views show a non-operator admin only its own tenant's rows.

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "broker/api.hpp"
#include "broker/json_body.hpp"
#include "core/cursor.hpp"
#include "logging/log.hpp"

namespace tidings::broker {

using json = nlohmann::json;

namespace {

// How long a view waits for the actors and I/O threads it asks; past it, it
// answers with what came and "partial": true.
constexpr std::chrono::seconds gather_deadline{2};

http_response only(std::string_view allow) {
  auto r = error_response(405, "method not allowed here; use " + std::string(allow));
  r.headers.emplace_back("Allow", std::string(allow));
  return r;
}

// What a view needs from other threads.
struct admin_snapshot {
  std::vector<actors::source_info> sources;
  std::map<std::string, std::size_t> watches;  // tenant -> watches it holds
  std::vector<relay::session_info> sessions;
  bool partial = false;
};

struct admin_parts {
  bool sources = false;
  std::optional<std::string> source_tenant;  // empty: every tenant
  std::vector<std::string> watch_tenants;    // whose watches to count
  bool sessions = false;
};

// Collects the parts asked for and calls `done` once, on whichever thread
// delivered the last part, or at the deadline with what came.
class gathering : public std::enable_shared_from_this<gathering> {
 public:
  gathering(boost::asio::io_context& timer_context, std::function<void(admin_snapshot)> done)
      : timer_(timer_context), done_(std::move(done)) {}

  void start(std::size_t pending) {
    pending_ = pending;
    if (pending == 0) return finish(false);
    timer_.expires_after(gather_deadline);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->finish(true);
    });
  }

  // Runs `fill` on the snapshot (under the lock), then counts one part done.
  template <class Fill>
  void part(Fill fill) {
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      if (!done_) return;
      fill(snapshot_);
      last = --pending_ == 0;
    }
    if (!last) return;
    // The timer belongs to its context's thread; cancel it there.
    boost::asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
    finish(false);
  }

 private:
  void finish(bool partial) {
    std::function<void(admin_snapshot)> done;
    admin_snapshot snapshot;
    {
      std::lock_guard lock(mutex_);
      if (!done_) return;
      done = std::move(done_);
      done_ = nullptr;
      snapshot = std::move(snapshot_);
    }
    snapshot.partial = partial;
    done(std::move(snapshot));
  }

  std::mutex mutex_;
  boost::asio::steady_timer timer_;
  std::function<void(admin_snapshot)> done_;  // empty once called
  admin_snapshot snapshot_;
  std::size_t pending_ = 0;
};

// `in_flight` counts gatherings not yet answered: the node waits for none
// to be left before it stops the sources thread their deadline runs on.
void gather(std::atomic<int>& in_flight, boost::asio::io_context& timer_context,
            const actors::source_registry_actor& sources, const actors::watch_manager_actor& watches,
            const std::vector<std::shared_ptr<relay::io_shard>>& shards, const admin_parts& parts,
            std::function<void(admin_snapshot)> done) {
  ++in_flight;
  auto g = std::make_shared<gathering>(timer_context, [&in_flight, done = std::move(done)](admin_snapshot s) {
    done(std::move(s));
    --in_flight;
  });
  std::size_t pending =
      (parts.sources ? 1 : 0) + parts.watch_tenants.size() + (parts.sessions ? shards.size() : 0);
  g->start(pending);
  if (parts.sources) {
    auto req = std::make_shared<actors::source_list_request>();
    req->tenant = parts.source_tenant.value_or("");
    req->reply = [g](std::vector<actors::source_info> list) {
      g->part([&](admin_snapshot& s) { s.sources = std::move(list); });
    };
    caf::anon_send(sources, actors::source_list_atom::value, actors::source_list_request_ptr(std::move(req)));
  }
  for (const auto& tenant : parts.watch_tenants) {
    auto req = std::make_shared<actors::watch_list_request>();
    req->tenant = tenant;
    req->reply = [g, tenant](const std::vector<actors::watch_info>& list) {
      g->part([&](admin_snapshot& s) { s.watches[tenant] = list.size(); });
    };
    caf::anon_send(watches, actors::list_atom::value, actors::watch_list_request_ptr(std::move(req)));
  }
  if (parts.sessions)
    for (const auto& shard : shards)
      shard->list_sessions([g](std::vector<relay::session_info> list) {
        g->part([&](admin_snapshot& s) {
          for (auto& info : list) s.sessions.push_back(std::move(info));
        });
      });
}

// Wall-clock milliseconds as "2026-12-01T12:00:00.000Z".
std::string iso_time(std::int64_t ms) {
  std::time_t seconds = ms / 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", static_cast<int>(ms % 1000));
  return std::string(buf, n) + frac;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A limit as JSON: null when there is none (the no-auth mode's sessions).
json limit_json(std::size_t limit) {
  return limit == SIZE_MAX ? json(nullptr) : json(limit);
}

std::string selector_text(const core::stream_selector& s) {
  return s.prefix.empty() ? s.stream : s.stream + ":" + s.prefix;
}

json with_partial(json body, bool partial) {
  if (partial) body["partial"] = true;
  return body;
}

}  // namespace

void api::set_node(node_identity node, std::vector<std::shared_ptr<relay::io_shard>> shards,
                   std::function<void()> drain) {
  node_ = std::move(node);
  shards_ = std::move(shards);
  drain_ = std::move(drain);
}

bool api::is_operator(const caller& who) const {
  if (who->anonymous) return true;
  if (!who->who.admin) return false;
  auto table = security_.auth.tenants();
  const auto* t = table->find(who->who.tenant);
  return t && t->node_operator;
}

std::optional<route_result> api::admin_routes(const http_request& req, const caller& who,
                                              responder& respond) {
  const std::string_view path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (path == "/admin/v1/reload" && req.method == "POST" && !is_operator(who))
    return route_result{forbidden(who, req, "reloading the node needs an admin token of an operator tenant"),
                        {}};
  if (path == "/admin/v1/drain") {
    if (req.method != "POST") return route_result{only("POST"), {}};
    if (!is_operator(who))
      return route_result{forbidden(who, req, "draining the node needs an admin token of an operator tenant"),
                          {}};
    return drain_node(req, who);
  }
  if (path == "/admin/v1/streams/force-leader") {
    if (req.method != "POST") return route_result{only("POST"), {}};
    if (!is_operator(who))
      return route_result{
          forbidden(who, req, "forcing a stream's leader needs an admin token of an operator tenant"), {}};
    return force_leader(req, who, std::move(respond));
  }
  using view = route_result (api::*)(const caller&, responder);
  static const std::pair<std::string_view, view> views[] = {{"/admin/v1/watches", &api::admin_watches},
                                                            {"/admin/v1/streams", &api::admin_streams},
                                                            {"/admin/v1/sessions", &api::admin_sessions},
                                                            {"/admin/v1/tenants", &api::admin_tenants}};
  for (const auto& [route, handler] : views) {
    if (path != route) continue;
    if (!get) return route_result{only("GET"), {}};
    // The views gather from threads that stop during a drain.
    if (draining_) return route_result{error_response(503, "the node is draining"), {}};
    return (this->*handler)(who, std::move(respond));
  }
  if (path == "/admin/v1/webhooks") {
    if (!get) return route_result{only("GET"), {}};
    if (!is_operator(who))
      return route_result{
          forbidden(who, req, "webhook tokens are shown to an admin token of an operator tenant only"), {}};
    if (draining_) return route_result{error_response(503, "the node is draining"), {}};
    return admin_webhooks(req, who, std::move(respond));
  }
  if (path == "/admin/v1/nodes") {
    if (!get) return route_result{only("GET"), {}};
    if (draining_) return route_result{error_response(503, "the node is draining"), {}};
    return admin_nodes(who, std::move(respond));
  }
  return std::nullopt;
}

// The running upstream sources ("watchers"): one row per source key, however
// many watches and sessions hold it.
route_result api::admin_watches(const caller& who, responder respond) {
  admin_parts parts;
  parts.sources = true;
  parts.source_tenant = is_operator(who) ? "" : who->who.tenant;
  gather(admin_in_flight_, loop_.context(), sources_, watches_, shards_, parts,
         [respond = std::move(respond)](admin_snapshot s) {
           std::sort(s.sources.begin(), s.sources.end(), [](const auto& a, const auto& b) {
             return std::tie(a.tenant, a.uri, a.key) < std::tie(b.tenant, b.uri, b.key);
           });
           json rows = json::array();
           for (const auto& src : s.sources) {
             json row = {{"tenant", src.tenant},
                         {"uri", src.uri},
                         {"key", src.key},
                         {"stream", src.stream},
                         {"server", src.server},
                         {"strategy", src.strategy},
                         {"shape", src.shape},
                         {"state", src.state},
                         {"subscribers", src.subscribers},
                         {"events", src.events},
                         {"reads", src.reads},
                         {"failures", src.failures},
                         {"last_fire_ms", src.last_fire_ms > 0 ? json(src.last_fire_ms) : json(nullptr)}};
             if (!src.error.empty()) row["error"] = src.error;
             if (src.next_attempt_ms > 0) row["next_attempt_ms"] = src.next_attempt_ms;
             rows.push_back(std::move(row));
           }
           respond(json_response(200, with_partial({{"watches", std::move(rows)}}, s.partial)));
         });
  return {};
}

route_result api::admin_streams(const caller& who, responder respond) {
  std::vector<persistence::stream_meta> metas;
  if (auto s = store_.load_streams(&metas); !s.ok())
    return {error_response(500, "storage error: " + s.message()), {}};
  const bool all = is_operator(who);
  if (!all) std::erase_if(metas, [&](const auto& m) { return m.tenant != who->who.tenant; });
  std::sort(metas.begin(), metas.end(), [](const auto& a, const auto& b) {
    return std::tie(a.tenant, a.name) < std::tie(b.tenant, b.name);
  });
  // Sizes are estimates from RocksDB's index and memtables: cheap, no scan.
  std::vector<std::uint64_t> bytes(metas.size(), 0);
  for (std::size_t i = 0; i < metas.size(); ++i)
    if (auto s = store_.approximate_event_bytes(metas[i].id, &bytes[i]); !s.ok())
      logging::warn("admin.size_unknown", {{"stream", metas[i].name}, {"error", s.message()}});
  std::map<std::pair<std::string, std::string>, std::string> replication;
  if (cluster_.replication) replication = cluster_.replication();
  admin_parts parts;
  parts.sessions = true;
  gather(admin_in_flight_, loop_.context(), sources_, watches_, shards_, parts,
         [respond = std::move(respond), metas = std::move(metas), bytes = std::move(bytes),
          replication = std::move(replication), owner = node_.id](const admin_snapshot& s) {
           std::map<std::pair<std::string, std::string>, std::uint64_t> subscribers;
           for (const auto& session : s.sessions)
             for (const auto& sel : session.streams) ++subscribers[{session.tenant, sel.stream}];
           json rows = json::array();
           for (std::size_t i = 0; i < metas.size(); ++i) {
             const auto& m = metas[i];
             auto it = subscribers.find({m.tenant, m.name});
             // A follower's copy of another member's log (ADR 0017) names that member.
             bool follower = !m.term_owner.empty() && m.term_owner != owner;
             json row{{"tenant", m.tenant},
                      {"name", m.name},
                      {"epoch", core::format_epoch(m.epoch)},
                      {"head", core::format_cursor({m.epoch, m.head_seq})},
                      {"first_seq", m.first_seq},
                      {"events", m.head_seq + 1 - m.first_seq},
                      {"subscribers", it == subscribers.end() ? 0 : it->second},
                      {"owner", follower ? m.term_owner : owner},
                      {"role", follower ? "follower" : "owner"},
                      {"bytes", bytes[i]}};
             if (auto r = replication.find({m.tenant, m.name}); r != replication.end())
               row["replication"] = json::parse(r->second);
             rows.push_back(std::move(row));
           }
           respond(json_response(200, with_partial({{"streams", std::move(rows)}}, s.partial)));
         });
  return {};
}

// Who is connected: never a token (a session does not keep one).
route_result api::admin_sessions(const caller& who, responder respond) {
  admin_parts parts;
  parts.sessions = true;
  std::optional<std::string> tenant;
  if (!is_operator(who)) tenant = who->who.tenant;
  gather(admin_in_flight_, loop_.context(), sources_, watches_, shards_, parts,
         [respond = std::move(respond), tenant = std::move(tenant)](admin_snapshot s) {
           if (tenant) std::erase_if(s.sessions, [&](const auto& x) { return x.tenant != *tenant; });
           std::sort(s.sessions.begin(), s.sessions.end(), [](const auto& a, const auto& b) {
             return std::tie(a.tenant, a.subject, a.shard, a.id) <
                    std::tie(b.tenant, b.subject, b.shard, b.id);
           });
           json rows = json::array();
           for (const auto& x : s.sessions) {
             json streams = json::array();
             for (const auto& sel : x.streams) streams.push_back(selector_text(sel));
             json row = {{"id", std::to_string(x.shard) + "-" + std::to_string(x.id)},
                         {"tenant", x.tenant},
                         {"subject", x.subject},
                         {"streams", std::move(streams)},
                         {"queue_frames", x.queue_frames},
                         {"queue_bytes", x.queue_bytes},
                         {"age_seconds", std::chrono::duration_cast<std::chrono::seconds>(x.age).count()}};
             row["remote"] = x.remote.empty() ? json(nullptr) : json(x.remote);
             rows.push_back(std::move(row));
           }
           respond(json_response(200, with_partial({{"sessions", std::move(rows)}}, s.partial)));
         });
  return {};
}

void api::local_counts(std::function<void(local_node_counts)> done) {
  admin_parts parts;
  parts.sources = true;
  parts.source_tenant = "";
  if (security_.auth.enabled()) {
    for (const auto& t : security_.auth.tenants()->tenants) parts.watch_tenants.push_back(t.id);
  } else {
    parts.watch_tenants.push_back(anonymous_auth()->who.tenant);
  }
  local_node_counts counts;
  for (const auto& shard : shards_) counts.sessions += shard->session_count();
  counts.streams = hubs_.hub_count();
  counts.relays = hubs_.relay_count();
  gather(admin_in_flight_, loop_.context(), sources_, watches_, shards_, parts,
         [done = std::move(done), counts](const admin_snapshot& s) mutable {
           for (const auto& [tenant, n] : s.watches) counts.watches += n;
           counts.sources = s.sources.size();
           counts.partial = s.partial;
           done(counts);
         });
}

// Any admin may read where the nodes are and whether they are up; the counts
// are node-wide (every tenant's load), so only an operator sees them. In a
// cluster the node actor asks every member for its own counts (ADR 0015).
route_result api::admin_nodes(const caller& who, responder respond) {
  const bool op = is_operator(who);
  auto self_row = [node = node_, draining = draining_.load()] {
    return json{{"id", node.id},
                {"address", node.address},
                {"state", draining ? "draining" : "alive"},
                {"self", true},
                {"started_at", iso_time(node.started_at_ms)},
                {"uptime_seconds", (now_ms() - node.started_at_ms) / 1000}};
  };
  if (cluster_.nodes) {
    cluster_.nodes([respond = std::move(respond), op, self_row](std::optional<std::string> rows_text) {
      if (!rows_text) return respond(error_response(503, "the cluster did not answer in time"));
      auto rows = json::parse(*rows_text, nullptr, false);
      if (!rows.is_array()) return respond(error_response(500, "unreadable cluster view"));
      static const std::set<std::string> counts = {"streams", "relays",   "sources",
                                                   "watches", "sessions", "feeds"};
      for (auto& row : rows) {
        if (row.value("self", false)) row.update(self_row());
        if (!op)
          for (const auto& k : counts) row.erase(k);
      }
      respond(json_response(200, {{"nodes", std::move(rows)}}));
    });
    return {};
  }
  if (!op) return {json_response(200, {{"nodes", json::array({self_row()})}}), {}};
  local_counts([respond = std::move(respond), self_row](const local_node_counts& c) {
    json row = self_row();
    row.update(json{
        {"streams", c.streams}, {"sources", c.sources}, {"watches", c.watches}, {"sessions", c.sessions}});
    respond(json_response(200, with_partial({{"nodes", json::array({std::move(row)})}}, c.partial)));
  });
  return {};
}

// Usage against limits, per tenant. Sessions are the slots the limits count.
route_result api::admin_tenants(const caller& who, responder respond) {
  struct tenant_row {
    std::string id;
    tenant_limits limits;
    bool node_operator = false;
  };
  std::vector<tenant_row> tenants;
  if (!security_.auth.enabled()) {
    tenants.push_back({who->who.tenant, limits_of(who), true});
  } else {
    const bool all = is_operator(who);
    for (const auto& t : security_.auth.tenants()->tenants)
      if (all || t.id == who->who.tenant) tenants.push_back({t.id, t.limits, t.node_operator});
  }
  std::sort(tenants.begin(), tenants.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::vector<persistence::stream_meta> metas;
  if (auto s = store_.load_streams(&metas); !s.ok())
    return {error_response(500, "storage error: " + s.message()), {}};
  std::map<std::string, std::size_t> streams;
  for (const auto& m : metas) ++streams[m.tenant];
  std::vector<std::size_t> sessions;
  sessions.reserve(tenants.size());
  for (const auto& t : tenants) sessions.push_back(security_.limits.sessions(t.id));

  admin_parts parts;
  parts.sources = true;
  parts.source_tenant = tenants.size() == 1 ? tenants.front().id : "";
  for (const auto& t : tenants) parts.watch_tenants.push_back(t.id);
  gather(admin_in_flight_, loop_.context(), sources_, watches_, shards_, parts,
         [respond = std::move(respond), tenants = std::move(tenants), streams = std::move(streams),
          sessions = std::move(sessions)](const admin_snapshot& s) {
           std::map<std::string, std::size_t> sources;
           for (const auto& src : s.sources) ++sources[src.tenant];
           json rows = json::array();
           for (std::size_t i = 0; i < tenants.size(); ++i) {
             const auto& t = tenants[i];
             const auto& l = t.limits;
             auto w = s.watches.find(t.id);
             auto st = streams.find(t.id);
             auto src = sources.find(t.id);
             rows.push_back(
                 {{"tenant", t.id},
                  {"operator", t.node_operator},
                  {"sessions", {{"used", sessions[i]}, {"limit", limit_json(l.sse_sessions)}}},
                  {"sessions_per_subject_limit", limit_json(l.sse_sessions_per_subject)},
                  {"streams_per_session_limit", limit_json(l.streams_per_session)},
                  {"watches",
                   {{"used", w == s.watches.end() ? 0 : w->second}, {"limit", limit_json(l.watches)}}},
                  {"publish_rate", l.publish_rate > 0 ? json(l.publish_rate) : json(nullptr)},
                  {"publish_burst", l.publish_burst > 0 ? json(l.publish_burst) : json(nullptr)},
                  {"max_body_bytes", l.max_body_bytes},
                  {"streams", st == streams.end() ? 0 : st->second},
                  {"sources", src == sources.end() ? 0 : src->second}});
           }
           respond(json_response(200, with_partial({{"tenants", std::move(rows)}}, s.partial)));
         });
  return {};
}

// The same graceful drain as SIGTERM: the node's main thread takes it from
// here (sessions get `closing`, then the process exits 0).
route_result api::drain_node(const http_request& req, const caller& who) {
  if (!drain_) return {error_response(503, "this node cannot be drained over the API"), {}};
  const bool already = draining_.exchange(true);
  std::size_t sessions = 0;
  for (const auto& shard : shards_) sessions += shard->session_count();
  security_.audit.record("drain", {{"tenant", who->who.tenant},
                                   {"by", who->who.subject},
                                   {"via", req.method + " " + req.path.substr(0, 64)},
                                   {"sessions", sessions},
                                   {"already_draining", already}});
  auto r = json_response(
      202,
      {{"draining", true}, {"node", node_.id}, {"sessions", sessions}, {"deadline_ms", cfg_.drain.count()}});
  // Once the client has the answer: the drain ends with the I/O threads.
  if (!already) r.after_sent = drain_;
  return {std::move(r), {}};
}

// {"tenant", "stream", "accept_loss"}: ADR 0021's unclean election, made by
// the node asked (the stream's owner by placement). Without accept_loss it
// only states what would be lost (409).
route_result api::force_leader(const http_request& req, const caller& who, responder respond) {
  if (!cluster_.force_leader)
    return {error_response(400, "forcing a leader needs a cluster with replication; this node runs alone"),
            {}};
  json body;
  if (auto bad = parse_json_body(req, body)) return {std::move(*bad), {}};
  if (!body.is_object() || !body.contains("tenant") || !body["tenant"].is_string() ||
      !body.contains("stream") || !body["stream"].is_string() ||
      (body.contains("accept_loss") && !body["accept_loss"].is_boolean()))
    return {error_response(400, "the body is {\"tenant\": T, \"stream\": S, \"accept_loss\": true|false}"),
            {}};
  const auto tenant = body["tenant"].get<std::string>();
  const auto stream = body["stream"].get<std::string>();
  const bool accept = body.value("accept_loss", false);
  security_.audit.record("force_leader", {{"tenant", who->who.tenant},
                                          {"by", who->who.subject},
                                          {"stream_tenant", tenant},
                                          {"stream", stream},
                                          {"accept_loss", accept}});
  cluster_.force_leader(tenant, stream, accept,
                        [respond = std::move(respond)](std::optional<std::string> text) {
                          if (!text)
                            return respond(error_response(503, "the cluster did not answer in time"));
                          auto reply = json::parse(*text, nullptr, false);
                          if (!reply.is_object()) return respond(error_response(500, "unreadable answer"));
                          const int status = reply.value("status", 500);
                          reply.erase("status");
                          respond(json_response(status, reply));
                        });
  return {};
}

// {"jti": "..."} or {"sub": "..."}, within the admin's own tenant.
route_result api::revoke_tokens(const http_request& req, const caller& who) {
  json body;
  if (auto bad = parse_json_body(req, body)) return {std::move(*bad), {}};
  if (!body.is_object() || body.size() != 1 || !(body.contains("jti") || body.contains("sub")))
    return {error_response(400, "the body names exactly one of {\"jti\": ID} or {\"sub\": SUBJECT}"), {}};
  const bool by_jti = body.contains("jti");
  const auto& value = by_jti ? body["jti"] : body["sub"];
  if (!value.is_string() || value.get_ref<const std::string&>().empty() ||
      value.get_ref<const std::string&>().size() > 512)
    return {error_response(400, std::string(by_jti ? "jti" : "sub") + " must be a string of 1 to 512 bytes"),
            {}};
  auto kind = by_jti ? persistence::revocation_kind::jti : persistence::revocation_kind::subject;
  if (auto s = security_.auth.revoke(who->who.tenant, kind, value.get<std::string>()); !s.ok())
    return {error_response(503, "revocation not stored: " + s.message()), {}};
  security_.audit.record("revoke", {{"tenant", who->who.tenant},
                                    {"by", who->who.subject},
                                    {by_jti ? "jti" : "sub", value.get<std::string>()}});
  return {json_response(200, {{"revoked", {{by_jti ? "jti" : "sub", value}}}, {"tenant", who->who.tenant}}),
          {}};
}

// Only operators get here (admin_routes), so the reply carries the node's
// own reason when the file is refused: they run the node and its config.
route_result api::reload_config(const caller& who) {
  auto [status, body] = security_.reload();
  security_.audit.record("reload", {{"tenant", who->who.tenant},
                                    {"by", who->who.subject},
                                    {"via", "POST /admin/v1/reload"},
                                    {"status", status},
                                    {"result", body}});
  return {json_response(status, body), {}};
}

}  // namespace tidings::broker
