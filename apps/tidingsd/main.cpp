// tidingsd: one Tidings node. See docs/api.md for flags and routes.

#include <iostream>
#include <string>
#include <vector>

#include "broker/config.hpp"
#include "broker/node.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = tidings::broker::parse_config(args);
  if (!parsed.cfg) {
    if (parsed.error.empty()) {
      std::cout << tidings::broker::usage();
      return 0;
    }
    std::cerr << "tidingsd: " << parsed.error << "\n" << tidings::broker::usage();
    return 2;
  }
  return tidings::broker::run_node(*parsed.cfg);
}
