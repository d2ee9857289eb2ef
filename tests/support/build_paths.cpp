#include "tests/support/build_paths.hpp"

// tests/support/CMakeLists.txt sets these on this file only.
#if !defined(TIDINGS_SOURCE_DIR) || !defined(TIDINGSD_PATH) || !defined(TIDINGS_CLI_PATH)
#error "TIDINGS_SOURCE_DIR, TIDINGSD_PATH and TIDINGS_CLI_PATH come from tests/support/CMakeLists.txt"
#endif

namespace tidings::testing {

const std::string& source_dir() {
  static const std::string path = TIDINGS_SOURCE_DIR;
  return path;
}

const std::string& tidingsd_path() {
  static const std::string path = TIDINGSD_PATH;
  return path;
}

const std::string& tidings_cli_path() {
  static const std::string path = TIDINGS_CLI_PATH;
  return path;
}

}  // namespace tidings::testing
