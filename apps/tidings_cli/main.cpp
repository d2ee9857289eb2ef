// `tidings`: publish to and watch a Tidings node, and manage its watches, from the shell.
// Exit codes: 0 success, 1 the server or the network failed us, 2 usage.

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "apps/tidings_cli/admin_command.hpp"
#include "apps/tidings_cli/cli_options.hpp"
#include "apps/tidings_cli/publish_command.hpp"
#include "apps/tidings_cli/watch_admin_command.hpp"
#include "apps/tidings_cli/watch_command.hpp"

int main(int argc, char** argv) {
  using namespace tidings::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  cli_options opts;
  try {
    opts = parse_cli(args, std::getenv("TIDINGS_SERVER"), std::getenv("TIDINGS_TOKEN"));
  } catch (const usage_error& e) {
    std::cerr << "tidings: " << e.what() << "\n" << usage_text;
    return 2;
  }
  if (opts.help) {
    std::cout << usage_text;
    return 0;
  }
  if (opts.command == "publish") return run_publish(opts.server, opts.publish);
  if (opts.command == "watch-start") return run_watch_start(opts.server, opts.watch_start);
  if (opts.command == "watch-list") return run_watch_list(opts.server, opts.watch_list);
  if (opts.command == "watch-stop") return run_watch_stop(opts.server, opts.watch_stop);
  if (opts.command == "admin") return run_admin(opts.server, opts.admin);
  return run_watch(opts.server, opts.watch);
}
