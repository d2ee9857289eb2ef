#pragma once

// What a web page on another site can make a browser send to this node
// (issue 28): cross-site requests that change state (CSRF), and DNS
// rebinding, where an attacker's name resolves to 127.0.0.1 so that the
// browser counts the node as the attacker's own origin. Pure checks over a
// request; api.cpp applies them before any route.

#include <optional>
#include <string>
#include <vector>

#include "broker/http_types.hpp"

namespace tidings::broker {

struct site_policy {
  // The node listens on loopback only: a Host header must name loopback
  // (localhost, *.localhost, 127.x.x.x, [::1]) or one of `hosts`; any other
  // name reached the node through a resolver the attacker controls.
  bool loopback_only = true;
  std::vector<std::string> hosts;
  // Origins (scheme://host[:port]) besides the node's own that may send
  // requests without tenants (the config's allowed_origins). With tenants
  // each tenant's allowed_origins apply instead (api.cpp).
  std::vector<std::string> origins;
};

// Why the Host header is refused, or nullopt.
std::optional<std::string> host_refusal(const http_request& req, const site_policy& policy);

// The node's own origin as the browser sees it: http://<Host header>.
std::optional<std::string> own_origin(const http_request& req);

// A request a browser made from another site, which must not change state
// here: a POST, PUT, PATCH or DELETE marked by the browser as cross-site or
// same-site (another port of the same host is "same-site") and carrying no
// Origin to judge it by. Requests with an Origin are judged by that.
bool cross_site_without_origin(const http_request& req);

// Without tenants: whether a request with this Origin may be served (the
// node's own origin, or one listed in policy.origins).
bool anonymous_origin_allowed(const http_request& req, const std::string& origin, const site_policy& policy);

// Host names and origins compare case-insensitively (ASCII only).
std::string ascii_lower(std::string text);

// localhost, *.localhost, 127.0.0.0/8 or ::1.
bool names_loopback(const std::string& host);

// The host part of a Host header value: no port, no IPv6 brackets,
// lowercased; "" when malformed.
std::string host_name_of(const std::string& host_header);

}  // namespace tidings::broker
