#include "tests/support/cluster_nodes.hpp"
#include "tests/support/bounded_poll.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "core/placement.hpp"
#include "tests/support/publishing.hpp"

namespace tidings::testing {

namespace {

using namespace std::chrono_literals;

// The tenant every key belongs to on a node without tenants.
constexpr const char* default_tenant = "default";

// How long a node may take to open its cluster port once it serves HTTP
// (it logs cluster.listening before node.listening, so this is slack).
constexpr auto cluster_listening_timeout = 10s;

// The etcd shared by every cluster of this process: started once, stopped
// at exit (and with the process, if it dies: PR_SET_PDEATHSIG).
etcd_cluster& shared_etcd() {
  static etcd_cluster etcd(1);
  return etcd;
}

std::string fresh_prefix() {
  static int next = 0;
  return "/tidings-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++) + "/";
}

std::string join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace

std::string random_cluster_secret() {
  static constexpr char digits[] = "0123456789abcdef";
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 64; ++i) out.push_back(digits[rd() % 16]);
  return out;
}

namespace {

void write_cluster_secret(const std::filesystem::path& file, const std::string& secret) {
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << secret << '\n';
    if (!out) throw std::runtime_error("cannot write " + file.string());
  }
  std::filesystem::permissions(file,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

}  // namespace

struct cluster_nodes::node {
  temp_dir dir;
  std::unique_ptr<tidingsd_process> process;
  std::string id;
  std::string cluster_address;
  // The stderr of runs before a restart: the current process only has its own.
  std::string earlier_logs;
  int runs = 0;
};

cluster_nodes::cluster_nodes(std::size_t count, std::vector<std::string> extra_args,
                             std::chrono::milliseconds converge_timeout, etcd_cluster* etcd,
                             bool distinct_users)
    : etcd_(etcd ? etcd : &shared_etcd()),
      prefix_(fresh_prefix()),
      secret_(random_cluster_secret()),
      distinct_users_(distinct_users),
      extra_args_(std::move(extra_args)),
      exceptions_at_start_(std::uncaught_exceptions()) {
  if (count == 0) throw std::invalid_argument("a cluster needs at least one node");
  for (std::size_t i = 0; i < count; ++i) nodes_.push_back(std::make_unique<node>());
  try {
    for (std::size_t i = 0; i < count; ++i) start(i);
    await_converged(converge_timeout);
  } catch (const std::exception& e) {
    // The destructor does not run for a constructor that throws: stop what
    // started here, and say what the nodes said.
    std::string message = std::string(e.what()) + "\n" + logs();
    for (auto& n : nodes_)
      if (n->process) n->process->kill9();
    throw std::runtime_error(message);
  }
}

cluster_nodes::~cluster_nodes() {
  for (auto& n : nodes_)
    if (n->process) n->process->kill9();
  if (std::uncaught_exceptions() > exceptions_at_start_ || std::getenv("TIDINGS_CLUSTER_LOGS") != nullptr)
    std::cerr << logs();
}

cluster_nodes::node& cluster_nodes::at(std::size_t i) {
  if (i >= nodes_.size()) throw std::out_of_range("no cluster node " + std::to_string(i));
  return *nodes_[i];
}

const cluster_nodes::node& cluster_nodes::at(std::size_t i) const {
  if (i >= nodes_.size()) throw std::out_of_range("no cluster node " + std::to_string(i));
  return *nodes_[i];
}

std::vector<std::string> cluster_nodes::member_args(const std::filesystem::path& dir,
                                                    const std::string& secret) const {
  write_cluster_secret(dir / "cluster.secret", secret);
  return {"--cluster-listen",
          "127.0.0.1:0",
          "--etcd",
          etcd_->endpoints(),
          "--etcd-prefix",
          prefix_,
          "--member-lease-seconds",
          "2",
          "--cluster-secret-file",
          (dir / "cluster.secret").string()};
}

void cluster_nodes::start(std::size_t i) {
  auto& n = at(i);
  if (n.process) {
    n.earlier_logs += "---- run " + std::to_string(n.runs) + " ----\n" + n.process->log();
    n.process.reset();
  }
  auto args = member_args(n.dir.path(), secret_);
  // TIDINGS_CLUSTER_DEBUG=1: every node logs at debug (with TIDINGS_CLUSTER_LOGS to see it).
  if (std::getenv("TIDINGS_CLUSTER_DEBUG") != nullptr) args.emplace_back("--verbose");
  for (auto arg : extra_args_) {
    // "{node}" is the node's number: a file of its own (cluster TLS).
    for (auto at = arg.find("{node}"); at != std::string::npos; at = arg.find("{node}"))
      arg.replace(at, 6, std::to_string(i));
    args.push_back(std::move(arg));
  }
  std::optional<process_user> user;
  if (distinct_users_) user = process_user{uid(i), static_cast<gid_t>(uid(i))};
  n.process = std::make_unique<tidingsd_process>(n.dir.path(), std::move(args), 20s, user);
  ++n.runs;

  if (!n.process->await_log("\"event\":\"cluster.listening\"", cluster_listening_timeout))
    throw std::runtime_error("node " + std::to_string(i) + " did not log cluster.listening");
  // The log is NDJSON: the line's own fields, not a substring, say where it listens.
  std::istringstream lines(n.process->log());
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("event", "") != "cluster.listening") continue;
    n.cluster_address = j.value("address", "");
    n.id = j.value("node", "");
    break;
  }
  if (n.cluster_address.empty() || n.id.empty())
    throw std::runtime_error("node " + std::to_string(i) + ": cluster.listening without address and node");
}

client::endpoint cluster_nodes::endpoint(std::size_t i) const {
  return at(i).process->endpoint();
}

std::string cluster_nodes::http_address(std::size_t i) const {
  auto ep = endpoint(i);
  return ep.host + ":" + std::to_string(ep.port);
}

const std::string& cluster_nodes::node_id(std::size_t i) const {
  return at(i).id;
}

const std::string& cluster_nodes::cluster_address(std::size_t i) const {
  return at(i).cluster_address;
}

std::uint16_t cluster_nodes::cluster_port(std::size_t i) const {
  const auto& a = at(i).cluster_address;
  return static_cast<std::uint16_t>(std::stoul(a.substr(a.rfind(':') + 1)));
}

uid_t cluster_nodes::uid(std::size_t i) const {
  return distinct_users_ ? node_user_base + static_cast<uid_t>(i) : ::getuid();
}

const std::filesystem::path& cluster_nodes::data_dir(std::size_t i) const {
  return at(i).dir.path();
}

tidingsd_process& cluster_nodes::process(std::size_t i) {
  return *at(i).process;
}

bool cluster_nodes::running(std::size_t i) const {
  return at(i).process && at(i).process->pid() > 0;
}

std::vector<std::string> cluster_nodes::ids() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) out.push_back(n->id);
  return out;
}

void cluster_nodes::kill9(std::size_t i) {
  at(i).process->kill9();
}

int cluster_nodes::terminate(std::size_t i, std::chrono::milliseconds timeout) {
  return at(i).process->terminate(timeout);
}

int cluster_nodes::await_exit(std::size_t i, std::chrono::milliseconds timeout) {
  auto& p = *at(i).process;
  bool stopped = p.await_log("\"event\":\"node.stopped\"", timeout);
  // A node that logged node.stopped is returning from main; one that did not
  // may have crashed (then it is already gone and this reaps it) or hang
  // (then the short wait fails, and the SIGTERM it sends changes nothing
  // the test looks at: the answer is -1 either way).
  return p.terminate(stopped ? std::chrono::milliseconds(10s) : std::chrono::milliseconds(100));
}

void cluster_nodes::restart(std::size_t i) {
  if (running(i)) throw std::logic_error("restart of node " + std::to_string(i) + ", which still runs");
  const auto old_id = at(i).id;
  start(i);
  if (at(i).id != old_id)
    throw std::runtime_error("node " + std::to_string(i) + " came back as " + at(i).id + ", not " + old_id);
}

nlohmann::json cluster_nodes::nodes_view(std::size_t i) const {
  // The view answers within 2 s by contract; the rest is slack for a busy machine.
  auto r = client::request(endpoint(i), "GET", "/admin/v1/nodes", {}, {}, 5s);
  if (r.status != 200)
    throw std::runtime_error("GET /admin/v1/nodes on node " + std::to_string(i) + ": status " +
                             std::to_string(r.status) + ", body " + r.body);
  return parse_body(r);
}

void cluster_nodes::await_converged(std::chrono::milliseconds timeout) {
  std::set<std::string> expected;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (running(i)) expected.insert(at(i).id);

  std::string last;
  // Each node learns the members from its etcd watch and dials them:
  // polling an admin view is the bounded way to see that settle.
  auto converged = poll_until(timeout, [&] {
    bool all = true;
    last.clear();
    for (std::size_t i = 0; i < nodes_.size() && all; ++i) {
      if (!running(i)) continue;
      try {
        auto view = nodes_view(i);
        // Alive means listed in etcd: a killed node stays listed until its
        // lease expires, so exactly the running ones, each connected.
        std::set<std::string> alive;
        bool connected = true;
        for (const auto& row : view.value("nodes", nlohmann::json::array()))
          if (row.value("state", "") == "alive") {
            alive.insert(row.value("id", ""));
            connected = connected && row.value("connected", false);
          }
        all = alive == expected && connected;
        last = "node " + std::to_string(i) + ": " + view.dump();
      } catch (const std::exception& e) {
        // A node that is still starting or stopping may not answer yet.
        all = false;
        last = "node " + std::to_string(i) + ": " + e.what();
      }
    }
    return all;
  });
  if (!converged)
    throw std::runtime_error("the cluster did not converge on " +
                             join(std::vector<std::string>(expected.begin(), expected.end()), ',') +
                             " within " + std::to_string(timeout.count()) + " ms; last view " + last);
}

std::string cluster_nodes::owned_stream(std::size_t owner, const std::string& prefix,
                                        std::optional<std::size_t> successor) const {
  const auto members = ids();
  const auto& owner_id = at(owner).id;
  std::vector<std::string> others;
  for (const auto& id : members)
    if (id != owner_id) others.push_back(id);
  for (int k = 0; k < 100000; ++k) {
    auto name = prefix + std::to_string(k);
    if (core::owner_of(members, default_tenant, name) != owner_id) continue;
    if (successor && core::owner_of(others, default_tenant, name) != at(*successor).id) continue;
    return name;
  }
  throw std::runtime_error("no stream named " + prefix + "N is placed on node " + std::to_string(owner));
}

std::string cluster_nodes::logs() const {
  std::string out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& n = *nodes_[i];
    out += "==== node " + std::to_string(i) + " (" + n.id + ") ====\n";
    out += n.earlier_logs;
    if (n.process) out += "---- run " + std::to_string(n.runs) + " ----\n" + n.process->log();
  }
  return out;
}

}  // namespace tidings::testing
