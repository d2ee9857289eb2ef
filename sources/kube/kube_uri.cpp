#include "sources/kube/kube_uri.hpp"

#include "net/percent_encoding.hpp"

namespace tidings::sources::kube {

namespace {

constexpr std::string_view scheme = "kube://";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view s, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out->push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return false;
    const int hi = hex_value(s[i + 1]);
    const int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// Lowercase DNS-ish names: resources, groups, versions, namespaces.
bool dns_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return true;
}

}  // namespace

bool parse_kube_uri(std::string_view uri, kube_uri* out, std::string* error) {
  auto fail = [&](std::string m) {
    *error = std::move(m);
    return false;
  };
  if (uri.substr(0, scheme.size()) != scheme) return fail("not a kube:// URI");
  std::string_view rest = uri.substr(scheme.size());
  if (const auto hash = rest.find('#'); hash != std::string_view::npos)
    return fail("kube:// URIs take no fragment");
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return fail("expected kube://{context}/{resource}");
  kube_uri u;
  if (!percent_decode(rest.substr(0, slash), &u.context) || u.context.empty())
    return fail("bad or empty context in " + std::string(uri));
  std::string_view resource = rest.substr(slash + 1);
  if (!resource.empty() && resource.back() == '/') resource.remove_suffix(1);
  if (!percent_decode(resource, &u.resource) || !dns_name(u.resource))
    return fail("bad resource '" + std::string(resource) +
                "': expected e.g. configmaps or deployments.v1.apps");
  bool seen_ns = false, seen_label = false, seen_field = false;
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param.empty()) continue;
    const auto eq = param.find('=');
    const std::string_view name = param.substr(0, eq);
    std::string value;
    if (eq != std::string_view::npos && !percent_decode(param.substr(eq + 1), &value))
      return fail("bad percent escape in parameter " + std::string(name));
    std::string* target = nullptr;
    bool* seen = nullptr;
    if (name == "namespace") {
      target = &u.namespace_;
      seen = &seen_ns;
    } else if (name == "labelSelector") {
      target = &u.label_selector;
      seen = &seen_label;
    } else if (name == "fieldSelector") {
      target = &u.field_selector;
      seen = &seen_field;
    } else {
      return fail("unknown parameter '" + std::string(name) +
                  "' (kube:// takes namespace, labelSelector, fieldSelector)");
    }
    if (*seen) return fail("parameter " + std::string(name) + " given twice");
    *seen = true;
    *target = std::move(value);
  }
  if (u.namespace_ == "*") u.namespace_.clear();
  if (!u.namespace_.empty() && (!dns_name(u.namespace_) || u.namespace_.find('.') != std::string::npos))
    return fail("bad namespace '" + u.namespace_ + "'");
  *out = std::move(u);
  return true;
}

std::string canonical_kube_uri(const kube_uri& u) {
  std::string s = std::string(scheme) + net::percent_encode(u.context, ":@") + "/" + u.resource;
  char sep = '?';
  auto add = [&](const char* name, const std::string& value) {
    if (value.empty()) return;
    s += sep;
    s += name;
    s += '=';
    // '=', ',' and '!' stay readable in selectors; only '&', '#' and the like are escaped.
    s += net::percent_encode(value, "=,!:/");
    sep = '&';
  };
  add("namespace", u.namespace_);
  add("labelSelector", u.label_selector);
  add("fieldSelector", u.field_selector);
  return s;
}

bool kube_collection_path(const kube_uri& u, std::string* path, std::string* error) {
  std::string name = u.resource;
  std::string prefix = "/api/v1";
  if (const auto dot = u.resource.find('.'); dot != std::string::npos) {
    name = u.resource.substr(0, dot);
    const std::string rest = u.resource.substr(dot + 1);
    const auto dot2 = rest.find('.');
    if (dot2 == std::string::npos || dot2 == 0 || dot2 + 1 == rest.size()) {
      *error =
          "resource '" + u.resource + "' needs the version: resource.version.group, e.g. deployments.v1.apps";
      return false;
    }
    prefix = "/apis/" + rest.substr(dot2 + 1) + "/" + rest.substr(0, dot2);
  }
  if (name.empty()) {
    *error = "empty resource name in '" + u.resource + "'";
    return false;
  }
  *path = prefix + (u.namespace_.empty() ? "" : "/namespaces/" + u.namespace_) + "/" + name;
  return true;
}

namespace {

void add_selectors(const kube_uri& u, std::string* target, char* sep) {
  if (!u.label_selector.empty()) {
    *target += *sep + std::string("labelSelector=") + net::percent_encode(u.label_selector);
    *sep = '&';
  }
  if (!u.field_selector.empty()) {
    *target += *sep + std::string("fieldSelector=") + net::percent_encode(u.field_selector);
    *sep = '&';
  }
}

}  // namespace

std::string kube_list_target(const kube_uri& u, const std::string& path) {
  std::string target = path;
  char sep = '?';
  add_selectors(u, &target, &sep);
  return target;
}

std::string kube_watch_target(const kube_uri& u, const std::string& path,
                              const std::string& resource_version) {
  std::string target = path + "?watch=1&allowWatchBookmarks=true";
  if (!resource_version.empty()) target += "&resourceVersion=" + net::percent_encode(resource_version);
  char sep = '&';
  add_selectors(u, &target, &sep);
  return target;
}

}  // namespace tidings::sources::kube
