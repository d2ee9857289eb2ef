#pragma once

// Reads back what a node stored for a stream, over its history API
// (GET /v1/streams/NAME and /events), on one keep-alive connection: the
// publish and failover scenarios check every acknowledged event with it.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"

namespace tidings::load {

// A stream's position: its epoch (hex, as the node writes it) and head seq.
struct stream_head {
  std::string epoch;  // empty: the stream does not exist
  std::uint64_t seq = 0;
};

// "<epoch>:<seq>" split; nullopt when it is not of that form.
std::optional<std::pair<std::string, std::uint64_t>> split_cursor(const std::string& cursor);

class stream_reader {
 public:
  stream_reader(const client::endpoint& node, const std::string& token);

  // Throws std::runtime_error when the node does not answer as documented.
  stream_head head(const std::string& stream);

  // Every retained event after seq `after`, page by page, as (seq, data).
  // Read from the first retained, so a position trimmed meanwhile is no
  // error. Throws like head().
  std::vector<std::pair<std::uint64_t, nlohmann::json>> events_after(const std::string& stream,
                                                                     std::uint64_t after);

 private:
  client::http_connection conn_;
  client::header_list headers_;
};

}  // namespace tidings::load
