#pragma once

// Running the real `tidings` CLI against a test node (cli_test.cpp,
// watch_cli_test.cpp).

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "client/http_client.hpp"
#include "tests/support/build_paths.hpp"

namespace tidings::testing {

inline constexpr std::chrono::seconds command_timeout{20};

inline std::string server_arg(const client::endpoint& ep) {
  return ep.host + ":" + std::to_string(ep.port);
}

// `tidings --server HOST:PORT args...`
inline std::vector<std::string> cli(const client::endpoint& ep, std::vector<std::string> args) {
  std::vector<std::string> argv{tidings_cli_path(), "--server", server_arg(ep)};
  for (auto& a : args) argv.push_back(std::move(a));
  return argv;
}

// The output split at '\n'; a last line without '\n' counts too.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace tidings::testing
