// tidings-load: the Tidings benchmark. Starts (or targets) a node on
// loopback, drives one scenario and prints its figures, ending with a JSON
// line. Exit codes: 0 pass, 1 failure or timeout, 2 usage.

#include <iostream>
#include <memory>

#include <boost/asio/io_context.hpp>

#include <sys/wait.h>

#include "apps/tidings_load/cluster_nodes.hpp"
#include "apps/tidings_load/load_options.hpp"
#include "apps/tidings_load/node_process.hpp"
#include "apps/tidings_load/nodes_view.hpp"
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

  if (opts.kind == scenario::failover) return run_failover(opts);

  // Every session is a descriptor here and in the node (which inherits this limit).
  const long files = raise_open_files_limit();
  const std::size_t needed = opts.sessions + opts.publishers + 64;
  if (files >= 0 && static_cast<std::size_t>(files) < needed) {
    std::cerr << "tidings-load: " << opts.sessions << " sessions need about " << needed
              << " open files; the limit is " << files << "\n";
    return 1;
  }

  auto tcp_endpoint = [](const tidings::client::endpoint& ep) {
    return boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address(ep.host), ep.port);
  };
  std::unique_ptr<node_process> node;
  std::unique_ptr<cluster_nodes> cluster;
  boost::asio::ip::tcp::endpoint server;
  std::vector<pid_t> pids;
  if (opts.pid) pids.push_back(*opts.pid);
  std::vector<boost::asio::ip::tcp::endpoint> cluster_servers;
  try {
    if (opts.kind == scenario::cluster) {
      auto nodes = opts.servers;
      if (!opts.tidingsd.empty()) {
        cluster = std::make_unique<cluster_nodes>(opts.tidingsd, opts.nodes, opts.node_args, opts.token,
                                                  std::chrono::seconds(20), std::chrono::seconds(30),
                                                  opts.etcd_members);
        nodes = cluster->endpoints();
        pids = cluster->pids();
        if (opts.owner_node) opts.stream = cluster->stream_owned_by(opts.owner_node - 1, opts.stream + "-");
        for (std::size_t i = 0; i < cluster->size(); ++i)
          std::cerr << "tidings-load: started node " << i + 1 << " (" << cluster->node(i).node_id()
                    << ") pid " << cluster->node(i).pid() << " on port " << cluster->node(i).port()
                    << ", cluster " << cluster->node(i).cluster_address() << "\n";
      } else {
        // Someone else's cluster: whole before it is measured, and every
        // node named, or the owner and its feeds cannot be checked.
        const auto view =
            await_alive(nodes[opts.publish_node - 1], nodes.size(), opts.token, std::chrono::seconds(10));
        if (alive_count(view) > nodes.size())
          throw std::runtime_error("the cluster has " + std::to_string(alive_count(view)) +
                                   " nodes alive and --servers names " + std::to_string(nodes.size()) +
                                   ": name every node");
      }
      for (const auto& n : nodes) cluster_servers.push_back(tcp_endpoint(n));
      server = cluster_servers[opts.publish_node - 1];
    } else if (!opts.tidingsd.empty()) {
      node = std::make_unique<node_process>(opts.tidingsd, opts.node_args, std::chrono::seconds(20));
      server = {boost::asio::ip::make_address("127.0.0.1"), node->port()};
      pids = {node->pid()};
      std::cerr << "tidings-load: started tidingsd pid " << node->pid() << " on port " << node->port()
                << "\n";
    } else {
      server = tcp_endpoint(*opts.server);
    }
  } catch (const std::exception& e) {
    std::cerr << "tidings-load: " << e.what() << "\n";
    return 1;
  }

  int rc = 1;
  {
    boost::asio::io_context ioc(1);
    scenario_context ctx{ioc, server, pids, opts, node.get(), cluster_servers};
    rc = opts.kind == scenario::idle           ? run_idle(ctx)
         : opts.kind == scenario::idle_streams ? run_idle_streams(ctx)
         : opts.kind == scenario::cluster      ? run_cluster(ctx)
         : opts.kind == scenario::publish      ? run_publish(ctx)
                                               : run_fanout(ctx);
  }

  if (cluster) cluster->stop(std::chrono::seconds(15));
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
