#include "web/assets.hpp"

#include <string>
#include <unordered_map>

#include "web/embedded_files.hpp"

namespace tidings::web {

namespace {

std::string_view content_type_of(std::string_view path) {
  auto ends = [&](std::string_view ext) { return path.ends_with(ext); };
  if (ends(".html")) return "text/html; charset=utf-8";
  // Browsers run module scripts only with a JavaScript MIME type.
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "text/plain; charset=utf-8";  // .d.ts and anything else: shown, never run
}

using table = std::unordered_map<std::string_view, asset>;

table build() {
  table out;
  for (std::size_t i = 0; i < detail::embedded_count; ++i) {
    const auto& f = detail::embedded_files[i];
    std::string_view path = f.path;
    asset a{{reinterpret_cast<const char*>(f.data), f.size}, content_type_of(path), f.etag};
    out.emplace(path, a);
    if (path.ends_with("/index.html")) out.emplace(path.substr(0, path.size() - 10), a);
  }
  return out;
}

}  // namespace

const asset* find_asset(std::string_view path) {
  static const table files = build();
  auto it = files.find(path);
  return it == files.end() ? nullptr : &it->second;
}

}  // namespace tidings::web
