#pragma once

// The source registry actor (actors/source_registry_actor.hpp): routes a
// URI on the sources thread, keeps one source actor per (tenant, source
// key) with the leases its subscribers hold, and stops a source when its
// last lease is dropped. A source that fails or cannot start leaves the
// table, so the next subscribe starts a fresh one.
//
// A reload that removes an upstream ends its sources the way a failed one
// ends (an ERROR event with "source_failed" on the stream, after the source
// is down); one that changes an upstream closes its sources, waits for them
// to end and starts each again for the same key on the new connector,
// keeping its leases: subscribers stay on src:<hash>, and the new source's
// first read diffs against the stored snapshot.
//
// In a cluster a source also closes when it is returned to its placement
// owner (a member that joined, ADR 0016): its leases are void then, and
// the holds behind them (every lease in a cluster is one, hub_router::
// hold_here) subscribe again there.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "actors/hub_registry.hpp"
#include "actors/source_registry_actor.hpp"
#include "persistence/group_commit.hpp"
#include "sources/catalog.hpp"
#include "sources/probe.hpp"
#include "sources/source_actors.hpp"
#include "sources/source_loop.hpp"
#include "sources/source_status.hpp"

namespace tidings::sources {

struct source_registry_config {
  catalog* upstreams = nullptr;  // used on the sources thread only
  boost::asio::io_context* loop = nullptr;
  persistence::store* store = nullptr;
  persistence::group_committer* committer = nullptr;
  actors::hub_registry* hubs = nullptr;
  std::vector<std::chrono::milliseconds> backoff;  // empty: 1, 2, 4, 8, 16 s
  probe* metrics = nullptr;                        // null: not measured
};

struct source_registry_state {
  static inline const char* name = "source_registry";

  struct entry {
    source_actor actor;
    std::shared_ptr<source_status> status;
    std::set<std::uint64_t> leases;
    std::size_t joining = 0;  // subscribers waiting for the first read
  };

  source_registry_config cfg;
  std::map<std::string, entry> sources;         // tenant '\0' key
  std::map<std::uint64_t, std::string> leases;  // lease -> tenant '\0' key
  // The stream each running source pins to this node (until it is down).
  std::map<caf::actor_addr, actors::stream_key> pinned;
  // Sources told to close and not down yet, by table key. A subscribe for
  // one of these keys waits for the old source to end: two sources of one
  // key would write one stream and one snapshot at once.
  std::map<std::string, caf::actor_addr> closing;
  std::map<std::string, std::vector<std::function<void()>>> after_close;
  // Connectors a reload took out of the catalog, until their last source
  // ended: a subscribe routed to one of them before the reload is routed
  // again (it would start a source on a connector about to stop).
  std::set<const void*> retired;
  std::uint64_t next_lease = 1;
  bool stopping = false;
  // Handing off (a cluster drain): no new source starts here, and these
  // run once no source runs or closes.
  bool handing_off = false;
  std::vector<actors::actor_task> when_idle;
};

actors::source_registry_actor::behavior_type source_registry(
    actors::source_registry_actor::stateful_pointer<source_registry_state> self, source_registry_config cfg);

// A reload's upstream changes, applied live. On the sources thread the
// connectors `make` returns (the added and changed ones) join the catalog,
// which then follows `order`, and the removed and replaced ones leave it;
// then `registry` ends the sources of `removed` connectors and restarts
// those of `changed` ones; the old connectors stop once none of their
// sources is left. Returns when that is done, or with an error after
// `timeout` (what is left still happens, later).
std::optional<std::string> reconfigure_upstreams(
    source_loop& loop, const actors::source_registry_actor& registry, const std::vector<std::string>& order,
    const source_loop::connector_factory& make, const std::vector<std::string>& removed,
    const std::vector<std::string>& changed, std::chrono::milliseconds timeout);

}  // namespace tidings::sources
