#pragma once

// The static files of the live view (web/live/), embedded in the binary.

#include <string_view>

namespace tidings::web {

struct asset {
  std::string_view body;
  std::string_view content_type;
  std::string_view etag;  // a strong validator, quoted: "\"3f2a...\""
};

// `path` is the request path: "/live/" names index.html, "/live/x.js" the
// file x.js. Null when there is no such file.
const asset* find_asset(std::string_view path);

}  // namespace tidings::web
