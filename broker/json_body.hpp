#pragma once

// Request bodies that must be JSON: the media type, a nesting limit checked
// before any recursive parser runs, then the parse itself.

#include <optional>

#include <nlohmann/json.hpp>

#include "broker/http_types.hpp"

namespace tidings::broker {

// Serializing JSON recurses once per level; a 100 000-deep document would
// overflow the stack. Real documents stay far below this.
inline constexpr std::size_t max_json_nesting = 128;

// Parses req.body into `out`; on failure the 4xx response to send.
std::optional<http_response> parse_json_body(const http_request& req, nlohmann::json& out);

}  // namespace tidings::broker
