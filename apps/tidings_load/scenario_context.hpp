#pragma once

// What every scenario gets from main: where the node is and how to observe it.

#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <sys/types.h>

#include "apps/tidings_load/load_options.hpp"
#include "apps/tidings_load/node_process.hpp"

namespace tidings::load {

struct scenario_context {
  boost::asio::io_context& ioc;
  boost::asio::ip::tcp::endpoint server;  // publishes go here, and sessions unless session_servers
  // For RSS and CPU figures, added up over a cluster's nodes; empty: reported as null.
  std::vector<pid_t> node_pids;
  const load_options& opts;
  node_process* node = nullptr;  // the node tidings-load started, if it did
  // cluster: every node, session s on the (s mod M)-th; empty: all on `server`.
  std::vector<boost::asio::ip::tcp::endpoint> session_servers;
};

// What a scenario built on fanout's run adds to it (cluster: per-node
// figures and the stream's relay feeds). Called on the main thread.
class fanout_extension {
 public:
  // Publishing starts: the baseline for figures over the run.
  virtual void on_publishing() = 0;
  // The run is over and its sessions are still open: what the nodes say now.
  virtual void on_finished() = 0;
  // Prints its lines after fanout's and adds its fields to the summary
  // before that is printed; returns why the run failed, or "".
  virtual std::string report(nlohmann::json& summary) = 0;

 protected:
  ~fanout_extension() = default;
};

// Each returns the process exit code (0 pass, 1 failure or timeout) after
// printing its report; the last line of a finished run is one JSON object.
int run_fanout(scenario_context& ctx, fanout_extension* extension = nullptr);
int run_cluster(scenario_context& ctx);
int run_idle(scenario_context& ctx);
int run_idle_streams(scenario_context& ctx);
int run_publish(scenario_context& ctx);
// Starts its own clusters (one per round), so it takes the options only.
int run_failover(const load_options& opts);

}  // namespace tidings::load
