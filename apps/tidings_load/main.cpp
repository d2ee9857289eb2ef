// tidings-load: the Tidings benchmark. Starts (or targets) a node on
// loopback, drives one scenario and prints its figures, ending with a JSON
// line. Exit codes: 0 pass, 1 failure or timeout, 2 usage.

#include <iostream>
#include <memory>

#include <boost/asio/io_context.hpp>

#include <sys/wait.h>

#include "apps/tidings_load/load_options.hpp"
#include "apps/tidings_load/node_process.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/scenario_context.hpp"

int main(int argc, char** argv) {
  using namespace tidings::load;
  load_options opts;
  try {
    opts = parse_load_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const usage_error& e) {
    std::cerr << "tidings-load: " << e.what() << "\n" << load_usage;
    return 2;
  }
  if (opts.help) {
    std::cout << load_usage;
    return 0;
  }

  // Every session is a descriptor here and in the node (which inherits this limit).
  const long files = raise_open_files_limit();
  const std::size_t needed = opts.sessions + opts.publishers + 64;
  if (files >= 0 && static_cast<std::size_t>(files) < needed) {
    std::cerr << "tidings-load: " << opts.sessions << " sessions need about " << needed
              << " open files; the limit is " << files << "\n";
    return 1;
  }

  std::unique_ptr<node_process> node;
  boost::asio::ip::tcp::endpoint server;
  std::optional<pid_t> pid = opts.pid;
  try {
    if (!opts.tidingsd.empty()) {
      node = std::make_unique<node_process>(opts.tidingsd, opts.node_args, std::chrono::seconds(20));
      server = {boost::asio::ip::make_address("127.0.0.1"), node->port()};
      pid = node->pid();
      std::cerr << "tidings-load: started tidingsd pid " << node->pid() << " on port " << node->port()
                << "\n";
    } else {
      server = {boost::asio::ip::make_address(opts.server->host), opts.server->port};
    }
  } catch (const std::exception& e) {
    std::cerr << "tidings-load: " << e.what() << "\n";
    return 1;
  }

  int rc = 1;
  {
    boost::asio::io_context ioc(1);
    scenario_context ctx{ioc, server, pid, opts, node.get()};
    rc = opts.kind == scenario::idle ? run_idle(ctx) : run_fanout(ctx);
  }

  if (node) {
    const int status = node->stop(std::chrono::seconds(15));
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      std::cerr << "tidings-load: tidingsd did not exit cleanly (wait status " << status
                << "); its last log lines:\n"
                << node->log_tail();
    }
  }
  return rc;
}
