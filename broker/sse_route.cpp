// GET /v1/sse: validate everything before the stream starts, so a bad
// request gets a plain 400 instead of a broken event stream.

#include <set>

#include "broker/api.hpp"
#include "broker/session_access.hpp"
#include "core/cursor_vector.hpp"
#include "core/watch_uri.hpp"

namespace tidings::broker {

route_result api::open_sse(const http_request& req, const caller& who, responder respond) {
  if (draining_) return {error_response(503, "the node is draining; connect to another node"), {}};
  const auto limits = limits_of(who);
  relay::sse_request out;
  out.tenant = who->who.tenant;
  out.subject = who->who.subject;
  auto specs = req.query_all("stream");
  auto uris = req.query_all("uri");
  if (specs.empty() && uris.empty())
    return {error_response(400,
                           "name at least one stream or upstream resource: /v1/sse?stream=NAME[:PREFIX] or "
                           "/v1/sse?uri=URI"),
            {}};
  if (specs.size() + uris.size() > limits.streams_per_session)
    return {error_response(429, "too many streams for one session (limit " +
                                    std::to_string(limits.streams_per_session) + ")"),
            {}};
  if (!uris.empty() && !who->who.read.covers_prefix("src:*", ""))
    return {forbidden(who, req, "reading upstream resources needs a read grant on src:*"), {}};
  for (const auto& uri : uris)
    if (!core::has_uri_scheme(uri) || uri.size() > 2048)
      return {error_response(400,
                             "bad uri '" + uri + "': expected an upstream resource URI such as scheme://..."),
              {}};
  std::set<std::string> seen;
  for (auto& spec : specs) {
    auto sel = core::parse_stream_selector(spec);
    if (!sel)
      return {error_response(
                  400, "bad stream '" + spec + "': use NAME or NAME:/PREFIX with NAME of a-z 0-9 . _ -"),
              {}};
    if (!seen.insert(sel->stream).second)
      return {error_response(400, "stream '" + sel->stream + "' is named twice"), {}};
    if (!who->who.read.covers_prefix(sel->stream, sel->prefix))
      return {forbidden(who, req,
                        "the token has no read grant for stream '" + sel->stream + "'" +
                            (sel->prefix.empty() ? std::string() : " under '" + sel->prefix + "'")),
              {}};
    out.streams.push_back(std::move(*sel));
  }
  // EventSource resends the original URL with Last-Event-ID, which is the
  // more recent position, so the header wins over `since`.
  const std::string* resume = req.header("last-event-id");
  const char* what = "Last-Event-ID";
  if (!resume || resume->empty()) {
    resume = req.query_one("since");
    what = "since";
  }
  if (resume && !resume->empty()) {
    auto cursors = core::decode_cursor_vector(*resume);
    if (!cursors)
      return {
          error_response(400, std::string(what) + " is not a cursor or a list of cursors: '" + *resume + "'"),
          {}};
    if (cursors->size() != out.streams.size() + uris.size())
      return {error_response(400, std::string(what) + " has " + std::to_string(cursors->size()) +
                                      " cursors but the connection names " +
                                      std::to_string(out.streams.size() + uris.size()) + " streams"),
              {}};
    out.resume = std::move(*cursors);
  }
  // The session's slot first: a request over its tenant's limit must not
  // spawn hubs for streams that do not exist yet.
  std::string why;
  auto slot = security_.limits.acquire_session(who->who.tenant, who->who.subject, limits, &why);
  if (!slot) return {error_response(429, why), {}};
  out.holds.push_back(std::move(slot));
  for (auto& sel : out.streams) {
    using admission = actors::hub_registry::admission;
    auto admitted = hubs_.admit_subscriber({out.tenant, sel.stream}, limits.unknown_streams);
    if (admitted == admission::admitted) continue;
    if (admitted == admission::store_failed)
      return {error_response(503, "reading stream '" + sel.stream + "' failed; retry later"), {}};
    auto which = admitted == admission::tenant_full
                     ? "for tenant '" + out.tenant + "' (limits.unknown_streams " +
                           std::to_string(limits.unknown_streams) + ")"
                     : "on this node (max-unknown-streams " + std::to_string(cfg_.max_unknown_streams) + ")";
    return {error_response(429, "too many watched streams that do not exist yet " + which + "; publish to '" +
                                    sel.stream + "' first, or retry when sessions waiting on others end"),
            {}};
  }
  if (!uris.empty()) return open_sse_with_sources(std::move(out), std::move(uris), who, std::move(respond));
  guard_session(out, who);
  return {{}, std::move(out)};
}

void api::guard_session(relay::sse_request& out, const caller& who) const {
  std::vector<std::string> names;
  for (const auto& sel : out.streams) names.push_back(sel.stream);
  out.guard = std::make_shared<session_access>(who, security_.auth, names);
}

// Each uri= is subscribed like a watch's (the source's first read happens
// now, and its error is the answer); the session then reads the sources'
// streams after the stream= ones, in the order named, holding their leases.
route_result api::open_sse_with_sources(relay::sse_request out, std::vector<std::string> uris, caller who,
                                        responder respond) {
  struct gathering {
    relay::sse_request request;
    std::vector<actors::source_subscribe_reply> replies;
    std::size_t pending = 0;
    responder respond;
    caller who;
    const api* self = nullptr;
  };
  auto g = std::make_shared<gathering>();
  g->who = std::move(who);
  g->self = this;
  g->request = std::move(out);
  g->replies.resize(uris.size());
  g->pending = uris.size();
  g->respond = std::move(respond);
  for (std::size_t i = 0; i < uris.size(); ++i) {
    auto req = std::make_shared<actors::source_subscribe_request>();
    req->tenant = g->request.tenant;
    req->uri = uris[i];
    // Replies come one at a time on the registry's thread.
    req->reply = [g, i, uri = uris[i]](actors::source_subscribe_reply r) {
      g->replies[i] = std::move(r);
      if (--g->pending > 0) return;
      for (std::size_t k = 0; k < g->replies.size(); ++k) {
        const auto& reply = g->replies[k];
        if (!reply.error) continue;
        unsigned status = reply.error->kind == actors::watch_error_kind::bad_request ? 400
                          : reply.error->kind == actors::watch_error_kind::upstream  ? 502
                                                                                     : 503;
        return g->respond(error_response(status, reply.error->message));
      }
      std::set<std::string> seen;
      for (const auto& sel : g->request.streams) seen.insert(sel.stream);
      for (auto& reply : g->replies) {
        if (!seen.insert(reply.stream).second)
          return g->respond(error_response(400, "stream '" + reply.stream + "' is named twice"));
        g->request.streams.push_back({reply.stream, ""});
        g->request.holds.push_back(reply.lease);
      }
      g->self->guard_session(g->request, g->who);
      http_response upgrade;
      upgrade.sse = std::move(g->request);
      g->respond(std::move(upgrade));
    };
    caf::anon_send(sources_, actors::source_sub_atom::value,
                   actors::source_subscribe_request_ptr(std::move(req)));
  }
  return {};
}

}  // namespace tidings::broker
