#pragma once

// PostgreSQL channels as cluster sources (tests with a real server from
// tests/support/postgres_server): the config naming it as upstream "app",
// the stream a channel's source feeds, a channel placed on a chosen node,
// and what PostgreSQL itself says is listening.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/cluster_nodes.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace tidings::testing {

// The PostgreSQL upstream's name in the config: URIs pg://app/{channel}.
inline constexpr const char* pg_upstream = "app";

// Writes a config file naming the server at `conninfo` as upstream "app".
void write_pg_config(const std::filesystem::path& file, const std::string& conninfo);

// A real PostgreSQL server and three nodes that all name it upstream "app".
struct pg_cluster {
  postgres_server pg;
  temp_dir dir;
  cluster_nodes cluster;
  pg_cluster();
};

// "pg://app/<channel>".
std::string pg_uri(const std::string& channel);

// The stream a channel's source feeds, as the node names it: "src:" and 16
// hex digits of the SHA-256 of the source key "<connector>|<uri>". Tests use
// it to pick a channel placed on a chosen node; the sessions' hello confirms
// it (and fails plainly should the naming change).
std::string source_stream_of(const std::string& uri);

// The first channel orders0, orders1, ... whose source stream node `owner`
// owns among every node.
std::string channel_owned_by(const cluster_nodes& cluster, std::size_t owner);

// The statements of the backends PostgreSQL reports as listening: those
// whose last statement was a LISTEN (a source's connection runs nothing
// else once it listens).
std::vector<std::string> listen_statements(const std::string& conninfo);

}  // namespace tidings::testing
