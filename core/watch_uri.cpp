#include "core/watch_uri.hpp"

#include "core/event.hpp"
#include "core/stream_name.hpp"

namespace tidings::core {

bool valid_watch_name(std::string_view name) {
  return name.size() <= 64 && valid_stream_name(name);
}

std::string watch_notice_stream(std::string_view watch_name) {
  return "watch:" + std::string(watch_name);
}

bool is_stream_uri(std::string_view uri) {
  return uri.starts_with(stream_uri_scheme);
}

bool has_uri_scheme(std::string_view uri) {
  auto colon = uri.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == uri.size()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(uri[0])) return false;
  for (auto c : uri.substr(0, colon))
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return false;
  return true;
}

std::optional<stream_uri> parse_stream_uri(std::string_view uri, std::string* error) {
  if (!uri.starts_with(stream_uri_scheme)) {
    auto scheme_end = uri.find("://");
    *error = scheme_end == std::string_view::npos
                 ? "uri must look like stream://NAME[/prefix]"
                 : "no source serves the scheme " + std::string(uri.substr(0, scheme_end)) +
                       ":// (this node watches stream:// URIs)";
    return std::nullopt;
  }
  auto rest = uri.substr(stream_uri_scheme.size());
  auto slash = rest.find('/');
  stream_uri out;
  out.stream = std::string(rest.substr(0, slash));
  if (!valid_stream_name(out.stream)) {
    *error = "uri names no valid stream: expected stream://NAME with NAME of [a-z0-9._-], got " +
             std::string(uri.size() > 200 ? uri.substr(0, 200) : uri);
    return std::nullopt;
  }
  if (slash != std::string_view::npos) {
    out.prefix = std::string(rest.substr(slash));
    if (out.prefix == "/") {
      out.prefix.clear();
    } else if (auto why = check_event_path(out.prefix)) {
      *error = "uri path prefix: " + *why;
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace tidings::core
