#pragma once

// The table cmake/embed_assets.cmake generates from web/live/ (private to
// web/assets.cpp; everything else goes through web/assets.hpp).

#include <cstddef>

namespace tidings::web::detail {

struct embedded_file {
  const char* path;  // "/live/index.html"
  const unsigned char* data;
  std::size_t size;
  const char* etag;  // quoted, as sent
};

extern const embedded_file embedded_files[];
extern const std::size_t embedded_count;

}  // namespace tidings::web::detail
