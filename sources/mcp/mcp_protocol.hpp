#pragma once

// The pure protocol rules of the MCP connector, apart from any I/O so tests
// drive them directly: the request `_meta` envelope, the era choice from the
// server/discover probe, listings and reads turned into the sources types,
// the description's "Example:" line, and header value encoding.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sources/mcp/json_rpc.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::mcp {

inline constexpr std::string_view modern_version = "2026-07-28";
// What a legacy initialize asks for; the server may answer with an older one.
inline constexpr std::string_view legacy_version = "2025-11-25";
inline constexpr std::string_view client_name = "tidings";
inline constexpr std::string_view client_version = "0.1.0";

// Spec-defined modern error codes (HeaderMismatch, MissingRequiredClientCapability,
// UnsupportedProtocolVersion): only these mark a server as modern when the
// probe fails; any other error means legacy.
inline constexpr int header_mismatch_code = -32020;
inline constexpr int missing_capability_code = -32021;
inline constexpr int unsupported_version_code = -32022;
bool is_modern_error(int code);

enum class era { modern, legacy };

// The `_meta` every modern request carries.
nlohmann::json request_meta();
// params (an object or null) with `_meta` added.
nlohmann::json with_meta(nlohmann::json params);

// The outcome of the server/discover probe.
struct protocol_choice {
  era chosen = era::legacy;
  std::string version;          // modern: the version to speak; legacy: the one to ask for
  std::string error;            // set when no version can be agreed on
  nlohmann::json capabilities;  // modern: from the DiscoverResult
};

// Picks the era from the probe's answer, never from one error code alone
// (stdio "Backward Compatibility"): a DiscoverResult is modern; a recognized
// modern error is modern (UnsupportedProtocolVersion: pick from its
// `supported` list); any other error, an HTTP 4xx without a modern error
// body, or no answer in time is legacy. A transport failure is not an
// answer: it yields an error.
protocol_choice choose_protocol(const rpc_reply& probe);

// Whether the capabilities object advertises resources.subscribe.
bool advertises_subscribe(const nlohmann::json& capabilities);
bool advertises_resources(const nlohmann::json& capabilities);
// Whether it advertises resources.listChanged (notifications/resources/list_changed).
bool advertises_list_changed(const nlohmann::json& capabilities);

// The text after a description's "Example:" label (a line starting with it,
// else its last occurrence), trimmed; "" when there is none.
std::string example_line(std::string_view description);

// resources/list and resources/templates/list results as resource_info.
// Entries without a uri (uriTemplate) are skipped.
std::vector<resource_info> parse_resources(const nlohmann::json& result, const std::string& server,
                                           bool subscribable);
std::vector<resource_info> parse_templates(const nlohmann::json& result, const std::string& server,
                                           bool subscribable);

// Whether a listing names the URI: a resource of that URI, or a template it
// is an expansion of.
bool lists(const std::vector<resource_info>& listing, std::string_view uri);

// A resources/read result: the first content item. Text content is returned
// as is. A blob is refused with an error: watched resources must be text
// (JSON state or an event log); diffing base64 would only report "changed".
read_outcome parse_read(const nlohmann::json& result, const std::string& server, const std::string& uri);

// A value for Mcp-Name / Mcp-Param-*: as is when it is plain visible ASCII
// (spaces allowed inside), else "=?base64?...?=" (Streamable HTTP "Value Encoding").
std::string header_value(std::string_view v);

// "memory: resources/read failed: Resource not found (code -32002)"
std::string failure_text(const std::string& server, std::string_view method, const rpc_reply& r);

}  // namespace tidings::sources::mcp
