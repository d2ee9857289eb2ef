#pragma once

// Where the source tree is and where this build put the binaries the tests
// run. These are absolute paths of one checkout, so they are compiled into
// build_paths.cpp alone: every other test unit then compiles the same in any
// clone, and ccache serves a fresh clone (as CI makes) what an earlier build
// compiled (docs/testing.md).

#include <string>

namespace tidings::testing {

// The repository's root.
const std::string& source_dir();
// The tidingsd binary of this build.
const std::string& tidingsd_path();
// The `tidings` CLI of this build ("tidings-not-built" when the build has none).
const std::string& tidings_cli_path();

}  // namespace tidings::testing
