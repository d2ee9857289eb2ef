#pragma once

// What an upstream reported through its handlers, for the connector tests.

#include <string>
#include <vector>

#include "sources/upstream.hpp"

namespace tidings::sources::testing {

struct upstream_recorder {
  int subscribed = 0;
  int updated = 0;
  std::vector<std::string> ended;
  std::vector<std::string> degraded;

  upstream::handlers handlers() {
    upstream::handlers h;
    h.subscribed = [this] { ++subscribed; };
    h.updated = [this] { ++updated; };
    h.ended = [this](std::string reason) { ended.push_back(std::move(reason)); };
    h.degraded = [this](std::string error) { degraded.push_back(std::move(error)); };
    return h;
  }
};

}  // namespace tidings::sources::testing
