// POST /v1/streams/{stream}/events

#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>

#include "actors/watch_manager.hpp"
#include "broker/api.hpp"
#include "broker/json_body.hpp"
#include "core/event_body.hpp"
#include "core/json_text.hpp"
#include "core/stream_name.hpp"

namespace tidings::broker {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_idempotency_key = 200;

bool valid_idempotency_key(const std::string& key) {
  if (key.empty() || key.size() > max_idempotency_key) return false;
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

std::string cursors_body(const std::vector<core::cursor>& cursors, bool single) {
  if (single && cursors.size() == 1) return "{\"cursor\":\"" + core::format_cursor(cursors[0]) + "\"}";
  std::string body = "{\"cursors\":[";
  for (std::size_t i = 0; i < cursors.size(); ++i) {
    if (i) body += ',';
    body += '"' + core::format_cursor(cursors[i]) + '"';
  }
  return body + "]}";
}

}  // namespace

route_result api::publish(const std::string& stream, const http_request& req, const caller& who,
                          responder respond) {
  if (core::readable_stream_name(stream) && !core::valid_stream_name(stream))
    return {error_response(
                400, "the stream '" + stream + "' carries a watch's notices; only the watch publishes there"),
            {}};
  if (!core::valid_stream_name(stream))
    return {error_response(400, "bad stream name '" + stream +
                                    "': use 1 to 128 of a-z 0-9 . _ -, starting with a letter or digit"),
            {}};
  if (stream == actors::watch_events_stream)
    return {error_response(400, "the stream '" + stream + "' is reserved for watch lifecycle notices"), {}};
  if (draining_) return {error_response(503, "the node is draining; publish to another node or retry"), {}};
  if (!who->who.write.covers_prefix(stream, ""))
    return {forbidden(who, req, "the token has no write grant for stream '" + stream + "'"), {}};
  const auto limits = limits_of(who);
  if (req.body.size() > limits.max_body_bytes)
    return {error_response(
                413, "body over the tenant's limit of " + std::to_string(limits.max_body_bytes) + " bytes"),
            {}};

  std::string idempotency_key;
  if (auto* key = req.header("idempotency-key")) {
    if (!valid_idempotency_key(*key))
      return {error_response(400, "Idempotency-Key must be 1 to 200 visible ASCII characters"), {}};
    idempotency_key = *key;
  }

  if (auto bad = check_json_content_type(req)) return {std::move(*bad), {}};
  if (!hubs_.may_publish({who->who.tenant, stream}, limits.streams))
    return {error_response(429,
                           "the tenant has " + std::to_string(limits.streams) +
                               " streams on this node (limits.streams); publish to one of them, or raise the "
                               "limit"),
            {}};
  core::event_body body;
  if (auto err = core::parse_event_body(req.body, body)) return {error_response(400, *err), {}};
  auto request = std::make_shared<actors::publish_request>();
  request->events = std::move(body.events);
  const bool single = body.single;
  for (const auto& ev : request->events)
    if (!who->who.write.covers(stream, ev.path))
      return {forbidden(who, req,
                        "the token has no write grant for stream '" + stream + "' at path '" + ev.path + "'"),
              {}};
  if (limits.publish_rate > 0 && static_cast<double>(request->events.size()) > limits.publish_burst)
    return {error_response(413, "a batch of " + std::to_string(request->events.size()) +
                                    " events is more than the tenant's publish burst (" +
                                    std::to_string(static_cast<long long>(limits.publish_burst)) + ")"),
            {}};
  std::chrono::milliseconds retry_after{0};
  if (limits.publish_rate > 0 &&
      !security_.limits.admit_publish(who->who.tenant, request->events.size(), limits, &retry_after)) {
    auto r = error_response(429, "publish rate over the tenant's limit (" +
                                     std::to_string(static_cast<long long>(limits.publish_rate)) +
                                     " events/s, burst " +
                                     std::to_string(static_cast<long long>(limits.publish_burst)) + ")");
    r.headers.emplace_back("Retry-After",
                           std::to_string(std::max<long long>(1, (retry_after.count() + 999) / 1000)));
    return {std::move(r), {}};
  }
  request->idempotency_key = std::move(idempotency_key);
  request->reply = [respond = std::move(respond), single](const actors::publish_result& r) {
    switch (r.outcome) {
      case actors::publish_outcome::appended:
        return respond(http_response{201, cursors_body(r.cursors, single), "application/json", {}, {}, {}});
      case actors::publish_outcome::replayed: {
        http_response res{200, cursors_body(r.cursors, single), "application/json", {}, {}, {}};
        res.headers.emplace_back("Idempotent-Replay", "true");
        return respond(std::move(res));
      }
      case actors::publish_outcome::unavailable:
        return respond(error_response(503, "not stored: " + r.error));
      case actors::publish_outcome::storage_full: {
        // 507 (RFC 4918): the request is fine, the node has no room now.
        auto res = error_response(507, "not stored: " + r.error);
        res.headers.emplace_back("Retry-After", "10");
        return respond(std::move(res));
      }
      case actors::publish_outcome::uncertain:
        return respond(
            error_response(503, "not acknowledged: " + r.error +
                                    "; it may have been stored: retry with the same Idempotency-Key"));
    }
  };
  caf::anon_send(hubs_.get({who->who.tenant, stream}), actors::publish_atom::value, std::move(request));
  return {};
}

}  // namespace tidings::broker
