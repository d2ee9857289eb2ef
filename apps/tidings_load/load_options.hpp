#pragma once

// Command line of tidings-load.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

#include "client/http_client.hpp"

namespace tidings::load {

class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class scenario { fanout, many_streams, resume, restart, idle, idle_streams, cluster, publish, failover };

// What is being measured: a Tidings node, or nginx with the nchan module as
// the peer it is compared with.
enum class target { tidings, nchan };

struct load_options {
  std::optional<client::endpoint> server;  // a running node
  std::vector<client::endpoint> servers;   // cluster: the nodes of a running cluster
  std::string tidingsd;                    // or spawn this binary
  std::vector<std::string> node_args;      // extra flags for the spawned node (every node of a cluster)
  std::size_t nodes = 0;                   // cluster: how many nodes (0: 3, or one per --servers entry)
  std::size_t publish_node = 1;            // cluster: 1-based, the node every publish goes to
  std::size_t owner_node = 0;              // cluster with --tidingsd: 1-based, the node --stream is placed on
                                           // (a name NAME-k it owns is picked); 0: NAME as given
  std::size_t etcd_members = 1;            // cluster, failover with --tidingsd: the etcd it starts (1 or 3)
  std::size_t rounds = 5;                  // failover: clusters started, one owner killed in each
  scenario kind = scenario::fanout;
  target peer = target::tidings;
  std::size_t sessions = 0;  // 0: the scenario's default
  std::size_t events = 2000;
  std::size_t payload_bytes = 200;
  std::size_t publishers = 4;
  std::size_t connect_window = 256;  // sessions connecting at once
  std::string stream = "load";
  std::size_t streams = 0;              // 0: the scenario's default (fanout 1, many-streams 1000)
  std::size_t batch = 1;                // events per publish request (a JSON array when > 1)
  std::size_t streams_per_session = 1;  // many-streams: session s reads streams s..s+M-1 (mod C)
  double rate = 0;                      // events/s offered in all; 0: as fast as acks come back
  std::string uri;              // idle: sessions read this upstream resource (uri=) instead of a stream
  std::string token;            // sent as a bearer token by every session and publisher
  unsigned hold_s = 0;          // idle: keep the sessions open this long after they are ready
  std::size_t hold_events = 0;  // ...or until every session has received this many events
  unsigned timeout_s = 300;
  std::optional<pid_t> pid;    // the node's pid when not spawning (for RSS and CPU);
                               // for nchan, the single nginx worker's
  std::string report_path;     // --report FILE: an HTML page with the run's plots
  std::uint16_t tls_port = 0;  // --tls-port: sessions read over HTTPS on this port of --server's host
  bool tls_resume = true;      // --tls-resume on|off: reconnecting sessions offer their TLS session
  bool help = false;
};

load_options parse_load_options(const std::vector<std::string>& args);

const char* target_name(target t);

extern const char* const load_usage;

}  // namespace tidings::load
