// POST /v1/streams/{stream}/events

#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>

#include "broker/api.hpp"
#include "core/json_text.hpp"
#include "core/stream_name.hpp"

namespace tidings::broker {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_batch = 1000;
// Serializing JSON recurses once per level; a 100 000-deep document would
// overflow the stack. Real documents stay far below this.
constexpr std::size_t max_nesting = 128;
constexpr std::size_t max_idempotency_key = 200;

// Turns one JSON value into an event, or says what is wrong with it.
std::optional<std::string> to_event(const json& j, core::event& out) {
  if (!j.is_object()) return "an event must be a JSON object";
  for (auto& [key, value] : j.items()) {
    if (key == "path") {
      if (!value.is_string()) return "\"path\" must be a string";
      out.path = value.get<std::string>();
      if (auto err = core::check_event_path(out.path)) return "\"path\" " + *err;
    } else if (key == "type") {
      if (!value.is_string()) return "\"type\" must be a string";
      out.type = value.get<std::string>();
      if (auto err = core::check_event_type(out.type)) return "\"type\" " + *err;
    } else if (key == "data") {
      // Compact and valid UTF-8 by construction; a bad string fails here.
      out.data_json = value.dump(-1, ' ', false, json::error_handler_t::strict);
    } else {
      return "unknown field \"" + key + "\" (allowed: path, type, data)";
    }
  }
  return std::nullopt;
}

// True when no array or object in `text` nests deeper than `limit`. A plain
// scan (strings skipped), so it runs before any recursive parser sees the text.
bool nesting_within(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

// application/json, any +json type, or curl -d's default form type (whose
// body is still our JSON). Media types are case-insensitive; parameters such
// as charset are ignored.
bool acceptable_content_type(std::string_view value) {
  auto type = value.substr(0, value.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  std::string lower(type);
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower == "application/json" || lower == "application/x-www-form-urlencoded" ||
         (lower.starts_with("application/") && lower.ends_with("+json"));
}

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

route_result api::publish(const std::string& stream, const http_request& req, responder respond) {
  if (!core::valid_stream_name(stream))
    return {error_response(400, "bad stream name '" + stream +
                                    "': use 1 to 128 of a-z 0-9 . _ -, starting with a letter or digit"),
            {}};
  if (draining_) return {error_response(503, "the node is draining; publish to another node or retry"), {}};
  if (auto* ct = req.header("content-type"); ct && !acceptable_content_type(*ct))
    return {error_response(415, "Content-Type must be application/json"), {}};

  std::string idempotency_key;
  if (auto* key = req.header("idempotency-key")) {
    if (!valid_idempotency_key(*key))
      return {error_response(400, "Idempotency-Key must be 1 to 200 visible ASCII characters"), {}};
    idempotency_key = *key;
  }

  if (!nesting_within(req.body, max_nesting))
    return {error_response(400, "JSON nests deeper than " + std::to_string(max_nesting) + " levels"), {}};
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::exception& e) {
    return {error_response(400, std::string("malformed JSON: ") + e.what()), {}};
  }
  auto request = std::make_shared<actors::publish_request>();
  const bool single = !body.is_array();
  try {
    if (single) {
      core::event ev;
      if (auto err = to_event(body, ev)) return {error_response(400, *err), {}};
      request->events.push_back(std::move(ev));
    } else {
      if (body.empty()) return {error_response(400, "an empty array publishes nothing"), {}};
      if (body.size() > max_batch) return {error_response(400, "at most 1000 events per publish"), {}};
      for (std::size_t i = 0; i < body.size(); ++i) {
        core::event ev;
        if (auto err = to_event(body[i], ev))
          return {error_response(400, "event " + std::to_string(i) + ": " + *err), {}};
        request->events.push_back(std::move(ev));
      }
    }
  } catch (const json::exception& e) {
    return {error_response(400, std::string("bad event data: ") + e.what()), {}};
  }

  request->idempotency_key = std::move(idempotency_key);
  request->reply = [respond = std::move(respond), single](const actors::publish_result& r) {
    switch (r.outcome) {
      case actors::publish_outcome::appended:
        return respond(http_response{201, cursors_body(r.cursors, single), "application/json", {}});
      case actors::publish_outcome::replayed: {
        http_response res{200, cursors_body(r.cursors, single), "application/json", {}};
        res.headers.emplace_back("Idempotent-Replay", "true");
        return respond(std::move(res));
      }
      case actors::publish_outcome::unavailable:
        return respond(error_response(503, "not stored: " + r.error));
    }
  };
  caf::anon_send(hubs_.get({"default", stream}), actors::publish_atom::value, std::move(request));
  return {};
}

}  // namespace tidings::broker
