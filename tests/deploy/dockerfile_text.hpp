#pragma once

// The repository's Dockerfile as stages of instructions: enough to check what
// each stage is built from and runs, without a Docker engine.

#include <string>
#include <vector>

namespace tidings::testing::deploy {

struct instruction {
  std::string keyword;  // upper case: FROM, RUN, COPY, ...
  std::string args;     // the rest, continuation lines joined
};

struct stage {
  std::string from;                       // the image, without "AS name"
  std::string name;                       // the "AS name", or ""
  std::vector<instruction> instructions;  // after FROM
  // True when some instruction with `keyword` has `text` in its arguments.
  bool has(const std::string& keyword, const std::string& text) const;
};

// The Dockerfile at the repository root; throws when it cannot be read.
std::vector<stage> dockerfile_stages();

}  // namespace tidings::testing::deploy
