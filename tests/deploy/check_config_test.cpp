// Each compose node's configuration as compose starts it: the real tidingsd
// validates its mounted --config file with its command's flags and the
// environment compose gives it when the shell sets nothing (the dev-only
// defaults), so a key that is too short or a flag tidingsd lacks fails here.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/deploy/compose_file.hpp"
#include "tests/support/command_run.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings::testing;
using namespace tidings::testing::deploy;

}  // namespace

TEST_CASE("tidingsd --check-config accepts every compose node's config and flags", "[deploy][check]") {
  auto nodes = tidingsd_nodes(load_compose());
  REQUIRE(nodes.size() == 3);
  for (const auto& n : nodes) {
    INFO("service " << n.name);
    // The check runs as a child, which inherits this environment.
    for (const auto& [name, value] : environment(n.service))
      ::setenv(name.c_str(), interpolation_default(value).value_or(value).c_str(), 1);
    std::vector<std::string> argv{tidingsd_binary(), "--check-config", n.config.string()};
    argv.insert(argv.end(), n.flags.begin(), n.flags.end());
    auto r = run_command(argv, std::nullopt, 20s);
    INFO(describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find(": ok") != std::string::npos);
  }
}
