// cluster: fanout's run over a cluster (issue 6's benchmark): sessions
// spread evenly over every node (session s on node s mod M + 1), every
// publish on one node. A node that does not own the stream forwards the
// publish to its owner and serves its own sessions through one relay feed
// from it, so fanout's checks (loss, duplicates, order, one cursor per event
// wherever it is read) now hold across nodes. This adds what only a cluster
// has: the stream's owner and its relay feeds, read from the admin view
// while every session is still open (exactly one per other node with
// sessions, or the run fails), and each node's memory and CPU when
// tidings-load started the nodes.

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/tidings_load/nodes_view.hpp"
#include "apps/tidings_load/proc_stats.hpp"
#include "apps/tidings_load/scenario_context.hpp"

namespace tidings::load {

namespace {

using nlohmann::json;

struct node_figures {
  client::endpoint http;
  std::string id;  // from the admin view, by HTTP address
  std::size_t sessions = 0;
  std::optional<double> cpu_before;
  std::optional<double> cpu_s;
  std::optional<long long> rss;
};

std::string address_of(const client::endpoint& ep) {
  return ep.host + ":" + std::to_string(ep.port);
}

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json();
}

class cluster_figures final : public fanout_extension {
 public:
  explicit cluster_figures(const scenario_context& ctx) : ctx_(ctx) {
    const std::size_t m = ctx.session_servers.size();
    for (std::size_t i = 0; i < m; ++i) {
      const auto& ep = ctx.session_servers[i];
      node_figures n;
      n.http = {ep.address().to_string(), ep.port()};
      n.sessions = ctx.opts.sessions / m + (i < ctx.opts.sessions % m ? 1 : 0);
      nodes_.push_back(std::move(n));
    }
  }

  void on_publishing() override {
    for (std::size_t i = 0; i < nodes_.size() && i < ctx_.node_pids.size(); ++i)
      nodes_[i].cpu_before = cpu_seconds(ctx_.node_pids[i]);
  }

  void on_finished() override {
    for (std::size_t i = 0; i < nodes_.size() && i < ctx_.node_pids.size(); ++i) {
      auto& n = nodes_[i];
      n.rss = rss_bytes(ctx_.node_pids[i]);
      const auto after = cpu_seconds(ctx_.node_pids[i]);
      if (n.cpu_before && after) n.cpu_s = *after - *n.cpu_before;
    }
    try {
      view_ = fetch_nodes_view(publish_node().http, ctx_.opts.token);
    } catch (const std::exception& e) {
      view_error_ = e.what();
    }
  }

  std::string report(json& summary) override {
    if (!view_error_.empty()) {
      summary["cluster"] = {{"nodes", nodes_.size()}, {"publish_node", ctx_.opts.publish_node}};
      return "the relay feeds could not be read: " + view_error_;
    }
    for (auto& n : nodes_) n.id = node_id_at(view_, address_of(n.http));
    const auto feeds = feeds_of(view_, ctx_.opts.stream);
    const auto owner = feeds ? node_of(feeds->owner) : std::nullopt;
    const auto& publisher = publish_node();

    std::printf("  cluster           %zu nodes, publishes on node %zu (%s)", nodes_.size(),
                ctx_.opts.publish_node, shown(publisher.id).c_str());
    if (owner) {
      std::printf(", stream owned by node %zu (%s)%s\n", *owner + 1, nodes_[*owner].id.c_str(),
                  *owner + 1 == ctx_.opts.publish_node ? "" : ": publishes forwarded");
    } else {
      std::printf(", stream owner %s\n", feeds ? ("not among them: " + feeds->owner).c_str() : "not listed");
    }
    if (feeds) {
      std::string fed;
      for (const auto& id : feeds->nodes) fed += (fed.empty() ? "" : ", ") + describe(id);
      std::printf("  relay feeds       %zu from the owner (%s)\n", feeds->nodes.size(), fed.c_str());
    }
    json per_node = json::array();
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const auto& n = nodes_[i];
      std::printf("  node %-12zu %zu sessions", i + 1, n.sessions);
      if (n.rss) std::printf(", rss %.1f MiB", static_cast<double>(*n.rss) / 1048576.0);
      if (n.cpu_s) std::printf(", cpu %.2f s", *n.cpu_s);
      std::printf("  %s %s\n", address_of(n.http).c_str(), shown(n.id).c_str());
      per_node.push_back({{"node", i + 1},
                          {"id", n.id},
                          {"address", address_of(n.http)},
                          {"sessions", n.sessions},
                          {"rss_bytes", or_null(n.rss)},
                          {"cpu_s", or_null(n.cpu_s)}});
    }
    std::optional<long long> rss_total;
    if (!ctx_.node_pids.empty() && std::all_of(nodes_.begin(), nodes_.end(), [](auto& n) { return n.rss; })) {
      rss_total = 0;
      for (const auto& n : nodes_) *rss_total += *n.rss;
    }
    summary["cluster"] = {
        {"nodes", nodes_.size()},
        {"publish_node", ctx_.opts.publish_node},
        {"owner_node", owner ? json(*owner + 1) : json()},
        {"owner_id", feeds ? json(feeds->owner) : json()},
        {"publish_forwarded", owner ? json(*owner + 1 != ctx_.opts.publish_node) : json()},
        {"relay_feeds", feeds ? json(feeds->nodes.size()) : json()},
        {"rss_bytes", or_null(rss_total)},
    };
    summary["cluster_nodes"] = std::move(per_node);
    // --owner-node picked the name by placement: a different owner means
    // the nodes place streams otherwise than the tool computed.
    if (ctx_.opts.owner_node && owner != ctx_.opts.owner_node - 1)
      return "the stream was to be owned by node " + std::to_string(ctx_.opts.owner_node) + ", not " +
             (owner ? "node " + std::to_string(*owner + 1) : std::string("an unknown node"));
    return check_feeds(feeds, owner);
  }

 private:
  const node_figures& publish_node() const { return nodes_[ctx_.opts.publish_node - 1]; }

  std::optional<std::size_t> node_of(const std::string& id) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (!id.empty() && nodes_[i].id == id) return i;
    return std::nullopt;
  }

  static std::string shown(const std::string& id) { return id.empty() ? "not in the admin view" : id; }

  std::string describe(const std::string& id) const {
    const auto i = node_of(id);
    return i ? "node " + std::to_string(*i + 1) : id;
  }

  // The owner feeds every other node that has sessions, once each, and no
  // one else: a missing feed starves a node's sessions (the loss check would
  // say so too), a second one doubles the owner's work.
  std::string check_feeds(const std::optional<stream_feeds>& feeds, std::optional<std::size_t> owner) const {
    const bool counts_shown = std::any_of(view_["nodes"].begin(), view_["nodes"].end(),
                                          [](const json& row) { return row.contains("feeds"); });
    // Feeds are among the counts only an operator sees (a token without tidings.admin for the operator
    // tenant).
    if (!counts_shown) {
      std::printf("  relay feeds       not shown to this token: not checked\n");
      return {};
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].id.empty()) return "node " + std::to_string(i + 1) + " is not in the admin view";
    std::vector<std::string> expected;
    for (const auto& n : nodes_)
      if (n.sessions > 0 && (!feeds || n.id != feeds->owner)) expected.push_back(n.id);
    // With no feed at all, the owner must be the only node with sessions.
    if (!feeds) return expected.size() <= 1 ? "" : "no node feeds the stream to the others";
    if (!owner) return "the stream's owner " + feeds->owner + " is not one of the nodes";
    auto got = feeds->nodes;
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    if (got == expected) return {};
    std::string want, have;
    for (const auto& id : expected) want += (want.empty() ? "" : ", ") + describe(id);
    for (const auto& id : got) have += (have.empty() ? "" : ", ") + describe(id);
    return "the owner feeds [" + have + "], not one feed to each other node with sessions [" + want + "]";
  }

  const scenario_context& ctx_;
  std::vector<node_figures> nodes_;
  json view_;
  std::string view_error_;
};

}  // namespace

int run_cluster(scenario_context& ctx) {
  cluster_figures figures(ctx);
  return run_fanout(ctx, &figures);
}

}  // namespace tidings::load
