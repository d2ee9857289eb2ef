#include "apps/tidings_load/cluster_nodes.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>

#include <stdlib.h>
#include <sys/wait.h>

#include "apps/tidings_load/nodes_view.hpp"
#include "core/placement.hpp"

namespace tidings::load {

cluster_nodes::secret_file::secret_file() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tidings-load-secret-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  dir = pattern;
  path = dir / "cluster.secret";
  static constexpr char digits[] = "0123456789abcdef";
  std::random_device rd;
  std::string secret;
  for (int i = 0; i < 64; ++i) secret.push_back(digits[rd() % 16]);
  std::ofstream(path) << secret << '\n';
  std::filesystem::permissions(path,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

cluster_nodes::secret_file::~secret_file() {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

cluster_nodes::cluster_nodes(const std::string& binary, std::size_t count,
                             const std::vector<std::string>& extra_args, const std::string& token,
                             std::chrono::milliseconds start_timeout,
                             std::chrono::milliseconds converge_timeout, std::size_t etcd_members) {
  try {
    etcd_ = std::make_unique<etcd_process>(etcd_members, start_timeout);
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<std::string> args{"--cluster-listen",
                                    "127.0.0.1:0",
                                    "--etcd",
                                    etcd_->endpoints(),
                                    "--member-lease-seconds",
                                    std::to_string(lease_seconds),
                                    "--cluster-secret-file",
                                    secret_.path.string()};
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      nodes_.push_back(std::make_unique<node_process>(binary, args, start_timeout));
    }
    await_alive(endpoints().front(), count, token, converge_timeout);
  } catch (const std::exception& e) {
    // The destructor does not run for a constructor that throws.
    std::string logs;
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      logs += "node " + std::to_string(i + 1) + "'s last log lines:\n" + nodes_[i]->log_tail();
    stop(std::chrono::seconds(5));
    throw std::runtime_error(e.what() + std::string("\n") + logs);
  }
}

cluster_nodes::~cluster_nodes() {
  stop(std::chrono::seconds(10));
}

std::vector<client::endpoint> cluster_nodes::endpoints() const {
  std::vector<client::endpoint> out;
  for (const auto& n : nodes_) out.push_back({"127.0.0.1", n->port()});
  return out;
}

std::vector<pid_t> cluster_nodes::pids() const {
  std::vector<pid_t> out;
  for (const auto& n : nodes_) out.push_back(n->pid());
  return out;
}

std::string cluster_nodes::stream_owned_by(std::size_t i, const std::string& prefix) const {
  std::vector<std::string> ids;
  for (const auto& n : nodes_) ids.push_back(n->node_id());
  for (int k = 0; k < 100000; ++k) {
    auto name = prefix + std::to_string(k);
    if (core::owner_of(ids, "default", name) == ids[i]) return name;
  }
  throw std::runtime_error("no stream named " + prefix + "N is placed on node " + std::to_string(i + 1));
}

std::size_t cluster_nodes::stop(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t unclean = 0;
  for (std::size_t i = nodes_.size(); i-- > 0;) {
    auto& n = *nodes_[i];
    const bool running = n.pid() > 0;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int status = n.stop(std::max(left, std::chrono::milliseconds(0)));
    if (running && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      ++unclean;
      std::cerr << "tidings-load: node " << i + 1 << " did not exit cleanly (wait status " << status
                << "); its last log lines:\n"
                << n.log_tail();
    }
  }
  nodes_.clear();
  return unclean;
}

}  // namespace tidings::load
