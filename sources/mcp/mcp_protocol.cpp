#include "sources/mcp/mcp_protocol.hpp"

#include <algorithm>

#include "core/uri_template.hpp"

namespace tidings::sources::mcp {

using nlohmann::json;

namespace {

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string string_member(const json& j, const char* key) {
  const json* v = member(j, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

bool is_legacy_version(const std::string& v) {
  // Legacy versions are dates up to 2025-11-25; compare as ISO dates.
  return v.size() == 10 && v <= std::string(legacy_version);
}

// Picks a version from a server's list: modern first, else the newest legacy one.
protocol_choice pick_version(const json& versions) {
  protocol_choice c;
  std::string best_legacy;
  std::string listed;
  if (versions.is_array()) {
    for (const auto& v : versions) {
      if (!v.is_string()) continue;
      std::string s = v.get<std::string>();
      listed += (listed.empty() ? "" : ", ") + s;
      if (s == modern_version) {
        c.chosen = era::modern;
        c.version = s;
        return c;
      }
      if (is_legacy_version(s) && s > best_legacy) best_legacy = s;
    }
  }
  if (!best_legacy.empty()) {
    c.chosen = era::legacy;
    c.version = best_legacy;
    return c;
  }
  c.error = "no common protocol version: the server supports [" + listed + "], Tidings speaks " +
            std::string(modern_version) + " and " + std::string(legacy_version) + " or earlier";
  return c;
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

bool is_modern_error(int code) {
  return code == header_mismatch_code || code == missing_capability_code || code == unsupported_version_code;
}

json request_meta() {
  return {{"io.modelcontextprotocol/protocolVersion", modern_version},
          {"io.modelcontextprotocol/clientInfo", {{"name", client_name}, {"version", client_version}}},
          {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

json with_meta(json params) {
  if (!params.is_object()) params = json::object();
  params["_meta"] = request_meta();
  return params;
}

protocol_choice choose_protocol(const rpc_reply& probe) {
  protocol_choice c;
  switch (probe.failure) {
    case failure_kind::none: {
      const json* versions = member(probe.result, "supportedVersions");
      if (!versions) {
        // A result that is no DiscoverResult: some legacy servers answer
        // unknown methods with an empty result.
        c.chosen = era::legacy;
        c.version = legacy_version;
        return c;
      }
      c = pick_version(*versions);
      if (const json* caps = member(probe.result, "capabilities")) c.capabilities = *caps;
      return c;
    }
    case failure_kind::rpc_error:
      if (probe.code == unsupported_version_code) {
        const json* supported = member(probe.data, "supported");
        c = pick_version(supported ? *supported : json());
        if (c.error.empty() && c.chosen == era::modern) {
          // We asked for the modern version and it was refused: no agreement.
          c.error = "the server refused protocol " + std::string(modern_version) + ": " + probe.message;
        }
        return c;
      }
      if (is_modern_error(probe.code)) {
        c.chosen = era::modern;
        c.error = "server/discover was rejected: " + probe.describe();
        return c;
      }
      c.chosen = era::legacy;
      c.version = legacy_version;
      return c;
    case failure_kind::http_status:
    case failure_kind::timeout:
      c.chosen = era::legacy;
      c.version = legacy_version;
      return c;
    case failure_kind::transport:
      c.error = probe.message;
      return c;
  }
  return c;
}

bool advertises_resources(const json& capabilities) {
  const json* r = member(capabilities, "resources");
  return r && r->is_object();
}

bool advertises_subscribe(const json& capabilities) {
  const json* r = member(capabilities, "resources");
  const json* s = r ? member(*r, "subscribe") : nullptr;
  return s && s->is_boolean() && s->get<bool>();
}

bool advertises_list_changed(const json& capabilities) {
  const json* r = member(capabilities, "resources");
  const json* s = r ? member(*r, "listChanged") : nullptr;
  return s && s->is_boolean() && s->get<bool>();
}

bool lists(const std::vector<resource_info>& listing, std::string_view uri) {
  return std::any_of(listing.begin(), listing.end(), [uri](const resource_info& r) {
    if (!r.template_) return r.uri == uri;
    auto t = core::uri_template::parse(r.uri, nullptr);
    return t && t->match(uri).has_value();
  });
}

std::string example_line(std::string_view description) {
  static constexpr std::string_view label = "Example:";
  // A line that starts with the label wins (the ADR's convention).
  std::size_t pos = 0;
  std::size_t found = std::string_view::npos;
  while (pos <= description.size()) {
    std::size_t end = description.find('\n', pos);
    std::string_view line =
        description.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    std::size_t b = line.find_first_not_of(" \t");
    if (b != std::string_view::npos && line.substr(b).substr(0, label.size()) == label) {
      found = pos + b;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  if (found == std::string_view::npos) found = description.rfind(label);
  if (found == std::string_view::npos) return {};
  std::string_view rest = description.substr(found + label.size());
  std::size_t eol = rest.find('\n');
  return trim(rest.substr(0, eol));
}

namespace {

resource_info info_from(const json& item, const std::string& uri, bool is_template, const std::string& server,
                        bool subscribable) {
  resource_info r;
  r.uri = uri;
  r.template_ = is_template;
  r.name = string_member(item, "name");
  if (r.name.empty()) r.name = string_member(item, "title");
  r.description = string_member(item, "description");
  r.example = example_line(r.description);
  r.mime_type = string_member(item, "mimeType");
  r.server = server;
  r.subscribable = subscribable;
  return r;
}

}  // namespace

std::vector<resource_info> parse_resources(const json& result, const std::string& server, bool subscribable) {
  std::vector<resource_info> out;
  const json* items = member(result, "resources");
  if (!items || !items->is_array()) return out;
  for (const auto& item : *items) {
    std::string uri = string_member(item, "uri");
    if (uri.empty()) continue;
    out.push_back(info_from(item, uri, false, server, subscribable));
  }
  return out;
}

std::vector<resource_info> parse_templates(const json& result, const std::string& server, bool subscribable) {
  std::vector<resource_info> out;
  const json* items = member(result, "resourceTemplates");
  if (!items || !items->is_array()) return out;
  for (const auto& item : *items) {
    std::string uri = string_member(item, "uriTemplate");
    if (uri.empty()) continue;
    out.push_back(info_from(item, uri, true, server, subscribable));
  }
  return out;
}

read_outcome parse_read(const json& result, const std::string& server, const std::string& uri) {
  const json* contents = member(result, "contents");
  if (!contents || !contents->is_array() || contents->empty() || !(*contents)[0].is_object()) {
    return read_outcome::failed(server + ": resources/read " + uri + " returned no contents");
  }
  const json& first = (*contents)[0];
  read_result r;
  r.mime_type = string_member(first, "mimeType");
  const json* text = member(first, "text");
  if (text && text->is_string()) {
    r.text = text->get<std::string>();
    return read_outcome::ok(std::move(r));
  }
  if (member(first, "blob")) {
    return read_outcome::failed(server + ": resources/read " + uri +
                                " returned binary content (blob); only text resources can be watched");
  }
  return read_outcome::failed(server + ": resources/read " + uri + " returned content without text");
}

std::string header_value(std::string_view v) {
  bool safe = !v.empty() && v.front() != ' ' && v.front() != '\t' && v.back() != ' ' && v.back() != '\t';
  for (unsigned char c : v)
    if (c < 0x20 || c > 0x7e) safe = false;
  if (v.substr(0, 9) == "=?base64?" && v.size() >= 11 && v.substr(v.size() - 2) == "?=") safe = false;
  if (safe || v.empty()) return std::string(v);
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "=?base64?";
  std::size_t i = 0;
  while (i + 2 < v.size()) {
    unsigned n = (unsigned char)v[i] << 16 | (unsigned char)v[i + 1] << 8 | (unsigned char)v[i + 2];
    out += alphabet[n >> 18 & 63];
    out += alphabet[n >> 12 & 63];
    out += alphabet[n >> 6 & 63];
    out += alphabet[n & 63];
    i += 3;
  }
  if (i + 1 == v.size()) {
    unsigned n = (unsigned char)v[i] << 16;
    out += alphabet[n >> 18 & 63];
    out += alphabet[n >> 12 & 63];
    out += "==";
  } else if (i + 2 == v.size()) {
    unsigned n = (unsigned char)v[i] << 16 | (unsigned char)v[i + 1] << 8;
    out += alphabet[n >> 18 & 63];
    out += alphabet[n >> 12 & 63];
    out += alphabet[n >> 6 & 63];
    out += '=';
  }
  return out + "?=";
}

std::string failure_text(const std::string& server, std::string_view method, const rpc_reply& r) {
  return server + ": " + std::string(method) + " failed: " + r.describe();
}

}  // namespace tidings::sources::mcp
