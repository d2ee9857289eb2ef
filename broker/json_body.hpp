#pragma once

// Request bodies that must be JSON: the media type, a nesting limit checked
// before any recursive parser runs (core/event_body.hpp), then the parse.

#include <optional>

#include <nlohmann/json.hpp>

#include "broker/http_types.hpp"

namespace tidings::broker {

// 415 unless the Content-Type is JSON (or absent, or curl -d's form type).
std::optional<http_response> check_json_content_type(const http_request& req);

// Parses req.body into `out`; on failure the 4xx response to send.
std::optional<http_response> parse_json_body(const http_request& req, nlohmann::json& out);

}  // namespace tidings::broker
