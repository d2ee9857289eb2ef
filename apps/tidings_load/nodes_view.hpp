#pragma once

// What the cluster scenario reads from GET /admin/v1/nodes: whether the
// cluster has converged (every node listed alive) and, from the owner's row
// ("feeds":[{"tenant","stream","nodes":[ids]}]), which node owns the stream
// and which nodes it feeds. The blocking client is fine here: these calls
// run before the sessions open and after the last delivery, never while the
// run is being timed.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"

namespace tidings::load {

// The {"nodes":[...]} body; throws std::runtime_error unless 200 with that shape.
nlohmann::json fetch_nodes_view(const client::endpoint& node, const std::string& token);

// How many of the view's rows are alive.
std::size_t alive_count(const nlohmann::json& view);

// Polls `node`'s view, with short growing pauses, until it lists at least
// `count` nodes alive; returns that view. Throws std::runtime_error with the
// last answer when `timeout` passes first.
nlohmann::json await_alive(const client::endpoint& node, std::size_t count, const std::string& token,
                           std::chrono::milliseconds timeout);

// The id of the row whose HTTP address is `address` ("127.0.0.1:PORT"); empty when none is.
std::string node_id_at(const nlohmann::json& view, const std::string& address);

struct stream_feeds {
  std::string owner;               // the id of the node that owns the stream
  std::vector<std::string> nodes;  // the ids it feeds, one entry per relay feed
};
// Where `stream` is fed from (any tenant: a token's tenant names it otherwise
// than "default"); nullopt when no row feeds it, as when only its owner has
// sessions.
std::optional<stream_feeds> feeds_of(const nlohmann::json& view, const std::string& stream);

}  // namespace tidings::load
