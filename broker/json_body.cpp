#include "broker/json_body.hpp"

#include "core/event_body.hpp"

#include <cctype>
#include <string>
#include <string_view>

namespace tidings::broker {
namespace {

// application/json or any +json type. Never a type an HTML form or a
// no-preflight fetch can send (form-urlencoded, multipart, text/plain): a
// page on another site could otherwise post JSON here without asking
// (issue 28). Media types are case-insensitive; parameters such as charset
// are ignored.
bool acceptable_content_type(std::string_view value) {
  auto type = value.substr(0, value.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  std::string lower(type);
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower == "application/json" || (lower.starts_with("application/") && lower.ends_with("+json"));
}

}  // namespace

std::optional<http_response> check_json_content_type(const http_request& req) {
  const auto* ct = req.header("content-type");
  // A body without a type is what a fetch of a Blob sends without a preflight.
  if (ct ? !acceptable_content_type(*ct) : !req.body.empty())
    return error_response(415, std::string("Content-Type must be application/json (") +
                                   (ct ? "got '" + ct->substr(0, 64) + "'" : "none was given") +
                                   "; with curl: -H 'Content-Type: application/json')");
  return std::nullopt;
}

std::optional<http_response> parse_json_body(const http_request& req, nlohmann::json& out) {
  if (auto bad = check_json_content_type(req)) return bad;
  if (!core::json_nesting_within(req.body, core::max_json_nesting))
    return error_response(400,
                          "JSON nests deeper than " + std::to_string(core::max_json_nesting) + " levels");
  out = nlohmann::json::parse(req.body, nullptr, false);
  if (out.is_discarded()) {
    // Parse again for the message: only bad input pays for the exception.
    try {
      [[maybe_unused]] auto again = nlohmann::json::parse(req.body);
    } catch (const nlohmann::json::exception& e) {
      return error_response(400, std::string("malformed JSON: ") + e.what());
    }
    return error_response(400, "malformed JSON");
  }
  return std::nullopt;
}

}  // namespace tidings::broker
