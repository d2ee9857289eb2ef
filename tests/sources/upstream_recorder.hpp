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

  upstream::handlers handlers() {
    return {[this] { ++subscribed; }, [this] { ++updated; },
            [this](std::string reason) { ended.push_back(std::move(reason)); }};
  }
};

}  // namespace tidings::sources::testing
