#include "core/resource_routing.hpp"

#include <algorithm>
#include <utility>

namespace tidings::core {

std::string_view route_reason_name(route_reason reason) {
  switch (reason) {
    case route_reason::exact:
      return "exact";
    case route_reason::template_match:
      return "template";
    case route_reason::fallback:
      return "fallback";
  }
  return "fallback";
}

resource_router::resource_router(std::vector<upstream_listing> listings) : listings_(std::move(listings)) {
  for (std::size_t i = 0; i < listings_.size(); ++i) {
    for (const auto& text : listings_[i].templates) {
      std::string error;
      if (auto t = uri_template::parse(text, &error))
        templates_.push_back(parsed{i, std::move(*t)});
      else
        invalid_.push_back(listings_[i].name + ": " + error);
    }
  }
}

std::optional<route> resource_router::route_uri(std::string_view uri) const {
  for (std::size_t i = 0; i < listings_.size(); ++i) {
    const auto& exact = listings_[i].exact_uris;
    if (std::find(exact.begin(), exact.end(), uri) != exact.end())
      return route{i, route_reason::exact, std::string(uri), {}};
  }
  for (const auto& p : templates_) {
    if (auto vars = p.tmpl.match(uri))
      return route{p.index, route_reason::template_match, p.tmpl.text(), std::move(*vars)};
  }
  for (std::size_t i = 0; i < listings_.size(); ++i) {
    if (listings_[i].accepts_any) return route{i, route_reason::fallback, {}, {}};
  }
  return std::nullopt;
}

std::optional<route> route_resource(std::string_view uri, const std::vector<upstream_listing>& listings) {
  return resource_router(listings).route_uri(uri);
}

std::string description_example(std::string_view description) {
  constexpr std::string_view label = "Example:";
  auto at = description.find(label);
  if (at == std::string_view::npos) return {};
  std::string_view rest = description.substr(at + label.size());
  rest = rest.substr(0, rest.find('\n'));
  constexpr std::string_view space = " \t\r\f\v";
  auto b = rest.find_first_not_of(space);
  if (b == std::string_view::npos) return {};
  auto e = rest.find_last_not_of(space);
  return std::string(rest.substr(b, e - b + 1));
}

}  // namespace tidings::core
