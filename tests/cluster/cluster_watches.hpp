#pragma once

// Where the cluster runs watches, as the admin view and the watch list say
// it: per-node counts, the node holding one, and bounded polls for them to
// settle (they are gathered from every member on each request).

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/support/cluster_nodes.hpp"

namespace tidings::testing {

// Every row of a GET /v1/watches list named `name`.
std::vector<nlohmann::json> rows_named(const nlohmann::json& list, const std::string& name);

// Node id -> its `field` count ("watches", "watch_copies"), as node
// `viewer`'s GET /admin/v1/nodes reports them; empty when some row has no
// count (a member that did not answer in time).
std::map<std::string, int> node_counts(const cluster_nodes& cluster, std::size_t viewer,
                                       const std::string& field = "watches");
int total_of(const std::map<std::string, int>& counts);
std::string describe(const std::map<std::string, int>& counts);

// Polls node `viewer`'s nodes view until `members` rows (every node by
// default) have their count and they sum to `total`; the last counts seen.
std::map<std::string, int> await_watch_total(const cluster_nodes& cluster, std::size_t viewer, int total,
                                             std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                             std::size_t members = 0);

// The id of the one node whose count is 1 (the others 0), or "" when the
// counts say anything else.
std::string running_on(const std::map<std::string, int>& counts);

// Reads notices from `session` until every line of `wanted` was seen (or
// 10 s pass): every line seen, in order, with the notices' cursors, and
// why reading stopped early ("" when all were seen).
struct notices_seen {
  std::vector<std::string> lines;
  std::vector<std::string> cursors;
  std::string ended;
};
notices_seen read_notices(client::sse_stream& session, const std::set<std::string>& wanted);
// The same until some line contains `text`.
notices_seen read_notices_until(client::sse_stream& session, const std::string& text);

}  // namespace tidings::testing
