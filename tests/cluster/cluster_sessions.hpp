#pragma once

// What the cluster scenarios do over and over: open SSE sessions on several
// nodes for one stream, publish numbered events through one node, and
// compare what each session got with what the publisher was acknowledged.
// Nothing here sleeps; every read is bounded. Failures throw with the node
// and what came instead, so a REQUIRE around a call names the session.

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/sse_reading.hpp"

namespace tidings::testing {

// One SSE session and the node it is connected to.
struct node_session {
  std::size_t node = 0;
  std::unique_ptr<client::sse_stream> stream;
};

// Opens `per_node` sessions for `stream` on each of `nodes` (live events
// only) and waits for each one's hello.
std::vector<node_session> open_sessions(cluster_nodes& cluster, const std::vector<std::size_t>& nodes,
                                        int per_node, const std::string& stream);

// Publishes events {"path":"/e","data":{"i":first},...} for i in
// [first, first + count) through `ep`, one request each so that every one
// is forwarded on its own, and returns the acknowledged cursors in order.
std::vector<std::string> publish_numbered(const client::endpoint& ep, const std::string& stream, int first,
                                          int count);

// The `cursor` field of each event, in arrival order.
std::vector<std::string> cursors_of(const std::vector<data_event>& events);
// The SSE `id` of each event, in arrival order.
std::vector<std::string> ids_of(const std::vector<data_event>& events);

// Publishes event {"i": i} to `stream` through `ep` with Idempotency-Key
// "<stream>-<i>", once; the answer as it came.
client::http_response publish_keyed(const client::endpoint& ep, const std::string& stream, int i);
// Polls (bounded) until a publish through `ep` is refused with 503 and a
// body holding one of `reasons`; the last answer.
client::http_response await_refused(const client::endpoint& ep, const std::string& stream, int i,
                                    const std::vector<std::string>& reasons);
// Reads `stream` after `since` through every running node with a late
// session: "" when each got exactly `acked` (compare_with_acknowledged) and
// no control event, else what differed, per node.
std::string read_back_everywhere(cluster_nodes& cluster, const std::string& stream, const std::string& since,
                                 const std::map<int, std::string>& acked);
// "<epoch>" of "<epoch>:<seq>".
std::string epoch_of(const std::string& cursor);

// GET /v1/streams/{stream} on `ep`: the status and, for 200, the body.
struct stream_info {
  int status = 0;
  nlohmann::json body;
};
stream_info stream_info_of(const client::endpoint& ep, const std::string& stream);

// The row of `stream` in GET /admin/v1/streams on `ep` (where the node
// holding it says who owns it); null when the node lists no such stream.
// Throws unless the view answers 200.
nlohmann::json admin_stream_row(const client::endpoint& ep, const std::string& stream);

// In a GET /admin/v1/nodes body: the row of node `id` (null when absent);
// the relaying nodes a row's feeds list for `stream` of tenant default,
// sorted (a duplicate entry shows as a duplicate id); the rows "alive".
nlohmann::json node_row(const nlohmann::json& view, const std::string& id);
std::vector<std::string> feeding(const nlohmann::json& row, const std::string& stream);
int alive_members(const nlohmann::json& view);

}  // namespace tidings::testing
