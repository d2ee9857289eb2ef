// GET /v1/streams, /v1/streams/{stream}, /v1/streams/{stream}/events

#include <charconv>
#include <functional>
#include <memory>

#include "broker/api.hpp"
#include "core/json_text.hpp"
#include "core/stream_name.hpp"

namespace tidings::broker {
namespace {

constexpr std::uint64_t max_history_limit = 1000;
// A prefix read scans at most this many events per request, matched or not,
// so a rare prefix cannot make one request read a whole stream.
constexpr std::uint64_t max_history_scan = 10000;

std::string stream_json(const persistence::stream_meta& m) {
  auto count = m.head_seq + 1 - m.first_seq;
  std::string j = "{\"name\":" + core::json_string(m.name);
  j += ",\"epoch\":\"" + core::format_epoch(m.epoch) + "\"";
  j += ",\"head\":\"" + core::format_cursor({m.epoch, m.head_seq}) + "\"";
  j += ",\"first\":\"" + core::format_cursor({m.epoch, m.first_seq}) + "\"";
  j += ",\"events\":" + std::to_string(count);
  j += ",\"retention\":{\"events\":" + std::to_string(m.retention_count) +
       ",\"age_ms\":" + std::to_string(m.retention_age_ms) + "}}";
  return j;
}

http_response gone(std::string_view reason, std::string_view message, core::cursor head) {
  auto r = error_response(410, message);
  r.body.pop_back();
  r.body += ",\"reason\":\"" + std::string(reason) + "\",\"head\":\"" + core::format_cursor(head) + "\"}";
  return r;
}

http_response storage_error(const persistence::status& s) {
  return error_response(500, "storage error: " + s.message());
}

}  // namespace

http_response api::list_streams(const caller& who) {
  std::vector<persistence::stream_meta> metas;
  if (auto s = store_.load_streams(&metas); !s.ok()) return storage_error(s);
  std::string body = "{\"streams\":[";
  bool first = true;
  for (auto& m : metas) {
    if (m.tenant != who->who.tenant || !who->who.read.covers_prefix(m.name, "")) continue;
    // A follower's copy of another member's log is not this node's stream (ADR 0017).
    if (!m.term_owner.empty() && m.term_owner != node_.id) continue;
    if (!first) body += ',';
    first = false;
    body += stream_json(m);
  }
  return {200, body + "]}", "application/json", {}, {}, {}};
}

std::string api::remote_owner(const caller& who, const std::string& stream) const {
  return cluster_.owner_of ? cluster_.owner_of(who->who.tenant, stream) : std::string{};
}

namespace {

struct history_query {
  std::uint64_t limit = 100;
  std::optional<core::cursor> since;
  std::string prefix;
};

// Reads events (after, up_to], at most max, from wherever the log is.
using event_reader = std::function<persistence::status(
    std::uint64_t after, std::uint64_t up_to, std::size_t max, std::vector<persistence::stored_event>*)>;

http_response unreachable_owner(const std::string& owner) {
  return error_response(503, "the stream's owner (node " + owner + ") did not answer; try again");
}

// A reader over the events the owner sent (in seq order).
event_reader buffered(const std::shared_ptr<const std::vector<persistence::stored_event>>& events) {
  return [events](std::uint64_t after, std::uint64_t up_to, std::size_t max,
                  std::vector<persistence::stored_event>* out) {
    for (auto& e : *events) {
      if (out->size() >= max || e.seq > up_to) break;
      if (e.seq > after) out->push_back(e);
    }
    return persistence::status{};
  };
}

// The page of `m`'s log a history request asks for, filtered by its
// prefix and the token's paths.
http_response render_history(const std::string& stream, history_query q, const caller& who,
                             const persistence::stream_meta& m, const event_reader& read) {
  // Events outside the token's paths are skipped like a prefix's misses.
  const auto grants = who->who.read.for_stream(stream);
  const bool every_path = grants.whole_stream();
  core::cursor head{m.epoch, m.head_seq};
  std::uint64_t after = m.first_seq - 1;
  // "0000000000000000:0" is what a subscriber holds for a stream that did not
  // exist yet: from the beginning, as over SSE.
  if (q.since && *q.since == core::cursor{0, 0}) q.since.reset();
  if (q.since) {
    if (q.since->epoch != m.epoch)
      return gone("epoch_changed", "the cursor belongs to another epoch of this stream", head);
    switch (core::check_resume(q.since->seq, m.first_seq, m.head_seq)) {
      case core::resume_check::too_old:
        return gone("cursor_too_old", "the cursor is older than the first retained event", head);
      case core::resume_check::ahead_of_head:
        return gone("cursor_ahead", "the cursor is past the stream's head", head);
      case core::resume_check::ok:
        break;
    }
    after = q.since->seq;
  }

  std::string events;
  std::uint64_t matched = 0, scanned = 0, next = after;
  while (matched < q.limit && scanned < max_history_scan && next < m.head_seq) {
    std::vector<persistence::stored_event> page;
    auto want = q.prefix.empty() && every_path ? q.limit - matched
                                               : std::min<std::uint64_t>(256, max_history_scan - scanned);
    if (auto s = read(next, m.head_seq, want, &page); !s.ok()) return storage_error(s);
    // Retention may trim between reading the meta and reading the events;
    // never hand out the rest as if nothing were missing.
    if (page.empty() || page.front().seq != next + 1)
      return gone("cursor_too_old", "events were trimmed while reading; start again from 'first'", head);
    for (auto& e : page) {
      ++scanned;
      next = e.seq;
      if (!q.prefix.empty() && !std::string_view(e.ev.path).starts_with(q.prefix)) continue;
      if (!every_path && !grants.covers_path(e.ev.path)) continue;
      if (matched) events += ',';
      events += "{\"cursor\":\"" + core::format_cursor({m.epoch, e.seq}) +
                "\",\"path\":" + core::json_string(e.ev.path) + ",\"type\":" + core::json_string(e.ev.type) +
                ",\"time\":" + std::to_string(e.ev.time_ms) + ",\"data\":" + e.ev.data_json + "}";
      if (++matched == q.limit) break;
    }
  }
  std::string body = "{\"stream\":" + core::json_string(stream);
  body += ",\"head\":\"" + core::format_cursor(head) + "\"";
  body += ",\"first\":\"" + core::format_cursor({m.epoch, m.first_seq}) + "\"";
  body += ",\"events\":[" + events + "]";
  body += ",\"next\":\"" + core::format_cursor({m.epoch, next}) + "\"}";
  return {200, std::move(body), "application/json", {}, {}, {}};
}

}  // namespace

route_result api::get_stream(const std::string& stream, const http_request& req, const caller& who,
                             responder respond) {
  if (!core::readable_stream_name(stream))
    return {error_response(400, "bad stream name '" + stream + "'"), {}};
  if (!who->who.read.covers_prefix(stream, ""))
    return {forbidden(who, req, "the token has no read grant for stream '" + stream + "'"), {}};
  auto found = [stream](const std::optional<persistence::stream_meta>& meta) -> http_response {
    if (!meta) return error_response(404, "no stream named '" + stream + "'");
    return {200, stream_json(*meta), "application/json", {}, {}, {}};
  };
  if (auto owner = remote_owner(who, stream); !owner.empty()) {
    cluster_.read(who->who.tenant, stream, 0, 0,
                  [respond = std::move(respond), found, owner](const remote_log& log) {
                    respond(log.reached ? found(log.meta) : unreachable_owner(owner));
                  });
    return {};
  }
  std::optional<persistence::stream_meta> meta;
  if (auto s = store_.get_stream(who->who.tenant, stream, &meta); !s.ok()) return {storage_error(s), {}};
  return {found(meta), {}};
}

route_result api::history(const std::string& stream, const http_request& req, const caller& who,
                          responder respond) {
  auto now = [](http_response r) { return route_result{std::move(r), {}}; };
  if (!core::readable_stream_name(stream))
    return now(error_response(400, "bad stream name '" + stream + "'"));
  history_query q;
  if (auto* l = req.query_one("limit")) {
    auto [p, ec] = std::from_chars(l->data(), l->data() + l->size(), q.limit);
    if (ec != std::errc() || p != l->data() + l->size() || q.limit < 1 || q.limit > max_history_limit)
      return now(error_response(400, "limit must be a whole number from 1 to 1000"));
  }
  if (auto* s = req.query_one("since")) {
    q.since = core::parse_cursor(*s);
    if (!q.since) return now(error_response(400, "since must be a cursor <epoch>:<seq>, got '" + *s + "'"));
  }
  if (auto* p = req.query_one("prefix")) q.prefix = *p;
  if (!who->who.read.covers_prefix(stream, q.prefix))
    return now(forbidden(who, req,
                         "the token has no read grant for stream '" + stream + "'" +
                             (q.prefix.empty() ? std::string() : " under '" + q.prefix + "'")));

  if (auto owner = remote_owner(who, stream); !owner.empty()) {
    // One read at the owner covers what the page may scan.
    bool filtered = !q.prefix.empty() || !who->who.read.for_stream(stream).whole_stream();
    auto after = q.since ? q.since->seq : 0;
    auto max = filtered ? max_history_scan : q.limit;
    cluster_.read(who->who.tenant, stream, after, max,
                  [respond = std::move(respond), stream, q, who, owner](remote_log log) {
                    if (!log.reached) return respond(unreachable_owner(owner));
                    if (!log.meta) return respond(error_response(404, "no stream named '" + stream + "'"));
                    auto events =
                        std::make_shared<const std::vector<persistence::stored_event>>(std::move(log.events));
                    respond(render_history(stream, q, who, *log.meta, buffered(events)));
                  });
    return {};
  }
  std::optional<persistence::stream_meta> meta;
  if (auto s = store_.get_stream(who->who.tenant, stream, &meta); !s.ok()) return now(storage_error(s));
  if (!meta) return now(error_response(404, "no stream named '" + stream + "'"));
  auto id = meta->id;
  return now(render_history(stream, q, who, *meta,
                            [this, id](std::uint64_t after, std::uint64_t up_to, std::size_t max,
                                       std::vector<persistence::stored_event>* out) {
                              return store_.read_events(id, after, up_to, max, out);
                            }));
}

}  // namespace tidings::broker
