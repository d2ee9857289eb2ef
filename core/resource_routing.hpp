#pragma once

// Which upstream serves a resource URI (ADR 0005 "Client: Routing"): the one
// that lists it exactly, otherwise the one whose RFC 6570 template matches,
// otherwise the first that advertises `resources.subscribe`. Each step scans
// every upstream in order before the next step, so an exact listing further
// down beats a template above it; within a step the first upstream wins.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/uri_template.hpp"

namespace tidings::core {

// What one upstream advertises, in configuration order.
struct upstream_listing {
  std::string name;
  std::vector<std::string> exact_uris;
  std::vector<std::string> templates;  // RFC 6570, levels 1-3
  bool accepts_any = false;            // advertises resources.subscribe
};

enum class route_reason { exact, template_match, fallback };

// "exact", "template", "fallback".
std::string_view route_reason_name(route_reason reason);

struct route {
  std::size_t index = 0;  // into the listings
  route_reason reason = route_reason::fallback;
  std::string matched;      // the exact URI or the template; "" for fallback
  uri_variables variables;  // the template's variables (template_match only)
};

// The listings with their templates parsed once. A template that does not
// parse is skipped (an upstream's bad template must not hide the others) and
// reported by invalid_templates().
class resource_router {
 public:
  explicit resource_router(std::vector<upstream_listing> listings);

  // The upstream for `uri`, or nullopt when none takes it.
  std::optional<route> route_uri(std::string_view uri) const;

  const std::vector<upstream_listing>& listings() const { return listings_; }
  // "<upstream>: <parse error>" per template that did not parse.
  const std::vector<std::string>& invalid_templates() const { return invalid_; }

 private:
  struct parsed {
    std::size_t index;
    uri_template tmpl;
  };
  std::vector<upstream_listing> listings_;
  std::vector<parsed> templates_;  // in listing order
  std::vector<std::string> invalid_;
};

// One-shot form of resource_router(listings).route_uri(uri).
std::optional<route> route_resource(std::string_view uri, const std::vector<upstream_listing>& listings);

// The text after the first "Example:" in a resource description up to the end
// of that line, trimmed; "" when there is none (resource_info::example).
std::string description_example(std::string_view description);

}  // namespace tidings::core
