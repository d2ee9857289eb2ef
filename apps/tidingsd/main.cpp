// tidingsd: one Tidings node. See docs/api.md for flags and routes.
//
// Exit codes: 0 after a clean stop (or a valid --check-config), 2 for a
// configuration error (flags, the config file, tenants' scope expressions),
// 1 when the node cannot start for another reason (store, listen address).

#include <iostream>
#include <string>
#include <vector>

#include "broker/config.hpp"
#include "broker/node.hpp"
#include "broker/session_access.hpp"

namespace {

constexpr int config_error = 2;

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = tidings::broker::parse_config(args);
  if (!parsed.cfg) {
    if (parsed.error.empty()) {
      std::cout << tidings::broker::usage();
      return 0;
    }
    std::cerr << "tidingsd: " << parsed.error << "\n";
    if (parsed.bad_command_line) std::cerr << tidings::broker::usage();
    return config_error;
  }
  const auto& cfg = *parsed.cfg;
  // What parse_config cannot check alone: scope expressions compile (Lua).
  if (auto err = tidings::broker::compile_scopes(cfg.tenants)) {
    std::cerr << "tidingsd: " << (cfg.config_path.empty() ? "" : "config file " + cfg.config_path + ": ")
              << *err << "\n";
    return config_error;
  }
  if (cfg.check_only) {
    // Everything a start checks short of opening the store and the socket.
    std::cout << "config " << cfg.config_path << ": ok (" << tidings::broker::summary(cfg) << ")\n";
    return 0;
  }
  return tidings::broker::run_node(cfg);
}
