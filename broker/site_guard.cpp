#include "broker/site_guard.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <cctype>

namespace tidings::broker {
namespace {

bool state_changing(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

}  // namespace

std::string ascii_lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool names_loopback(const std::string& host) {
  if (host == "localhost" || host.ends_with(".localhost") || host == "::1") return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::string host_name_of(const std::string& host_header) {
  std::string v = ascii_lower(host_header);
  if (v.starts_with('[')) {
    auto close = v.find(']');
    if (close == std::string::npos) return {};
    auto rest = v.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return {};
    return v.substr(1, close - 1);
  }
  if (auto colon = v.find(':'); colon != std::string::npos) v.resize(colon);
  if (v.ends_with('.')) v.pop_back();  // "localhost." is localhost
  return v;
}

std::optional<std::string> host_refusal(const http_request& req, const site_policy& policy) {
  if (!policy.loopback_only) return std::nullopt;
  const auto* host = req.header("host");
  if (!host) return std::nullopt;  // HTTP/1.0 without Host: not a browser
  auto name = host_name_of(*host);
  if (!name.empty() && (names_loopback(name) ||
                        std::find(policy.hosts.begin(), policy.hosts.end(), name) != policy.hosts.end()))
    return std::nullopt;
  return "Host '" + host->substr(0, 128) +
         "' is not a name of this node, which listens on loopback only (a page on another site may have "
         "reached it through its own DNS name); add the name to allowed-hosts if it is yours";
}

std::optional<std::string> own_origin(const http_request& req) {
  const auto* host = req.header("host");
  if (!host || host->empty()) return std::nullopt;
  return "http://" + ascii_lower(*host);
}

bool cross_site_without_origin(const http_request& req) {
  if (!state_changing(req.method) || req.header("origin")) return false;
  const auto* site = req.header("sec-fetch-site");
  return site && (*site == "cross-site" || *site == "same-site");
}

bool anonymous_origin_allowed(const http_request& req, const std::string& origin, const site_policy& policy) {
  auto lower = ascii_lower(origin);
  // Behind a local TLS proxy the page's scheme is https with the same Host.
  if (auto own = own_origin(req); own && (*own == lower || "https" + own->substr(4) == lower)) return true;
  return std::find(policy.origins.begin(), policy.origins.end(), lower) != policy.origins.end();
}

}  // namespace tidings::broker
