#pragma once

// What every scenario gets from main: where the node is and how to observe it.

#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <sys/types.h>

#include "apps/tidings_load/load_options.hpp"
#include "apps/tidings_load/node_process.hpp"

namespace tidings::load {

struct scenario_context {
  boost::asio::io_context& ioc;
  boost::asio::ip::tcp::endpoint server;
  std::optional<pid_t> node_pid;  // for RSS and CPU figures; absent: reported as null
  const load_options& opts;
  node_process* node = nullptr;  // the node tidings-load started, if it did
};

// Each returns the process exit code (0 pass, 1 failure or timeout) after
// printing its report; the last line of a finished run is one JSON object.
int run_fanout(scenario_context& ctx);
int run_idle(scenario_context& ctx);

}  // namespace tidings::load
