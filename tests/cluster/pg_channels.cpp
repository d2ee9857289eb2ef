#include "tests/cluster/pg_channels.hpp"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <stdexcept>

#include "core/placement.hpp"
#include "tests/support/postgres_server.hpp"

namespace tidings::testing {
namespace {

std::string sha256_hex(const std::string& data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 0xf];
  }
  return out;
}

std::string config_for(const temp_dir& dir, const postgres_server& pg) {
  auto file = dir.path() / "tidings.yaml";
  write_pg_config(file, pg.conninfo());
  return file.string();
}

}  // namespace

pg_cluster::pg_cluster() : cluster(3, {"--config", config_for(dir, pg)}) {}

void write_pg_config(const std::filesystem::path& file, const std::string& conninfo) {
  std::ofstream(file) << "upstreams:\n  postgres:\n    " << pg_upstream << ": {conninfo: \"" << conninfo
                      << "\", path_field: id, connect_timeout_ms: 2000}\n";
}

std::string pg_uri(const std::string& channel) {
  return std::string("pg://") + pg_upstream + "/" + channel;
}

std::string source_stream_of(const std::string& uri) {
  return "src:" + sha256_hex(std::string("pg:") + pg_upstream + "|" + uri).substr(0, 16);
}

std::string channel_owned_by(const cluster_nodes& cluster, std::size_t owner) {
  const auto ids = cluster.ids();
  for (int k = 0; k < 10000; ++k) {
    auto channel = "orders" + std::to_string(k);
    if (core::owner_of(ids, "default", source_stream_of(pg_uri(channel))) == cluster.node_id(owner))
      return channel;
  }
  throw std::runtime_error("no channel's source is placed on node " + std::to_string(owner));
}

std::vector<std::string> listen_statements(const std::string& conninfo) {
  std::vector<std::string> out;
  for (const auto& row : pg_query(conninfo, "SELECT query FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'"))
    out.push_back(row.at(0));
  return out;
}

}  // namespace tidings::testing
