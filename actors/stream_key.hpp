#pragma once

#include <compare>
#include <string>

namespace tidings::actors {

// A stream is named within its tenant; nothing crosses tenants.
struct stream_key {
  std::string tenant;
  std::string name;
  auto operator<=>(const stream_key&) const = default;
};

}  // namespace tidings::actors
