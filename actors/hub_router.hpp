#pragma once

// How the hub registry learns that a stream is owned by another node. The
// cluster (cluster/) implements it; a single node has none and owns
// everything.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "actors/hub_actor.hpp"
#include "actors/source_registry_actor.hpp"

namespace tidings::actors {

// A stream's meta (nullopt: no such stream) and its newest events, oldest
// first, as its owner read them.
struct stream_tail {
  std::optional<persistence::stream_meta> meta;
  std::vector<persistence::stored_event> events;
};

class hub_router {
 public:
  virtual ~hub_router() = default;
  // The member that owns the stream, or "" when this node does. Called from
  // any thread, often: it must be cheap and must not block.
  virtual std::string owner(const stream_key& key) = 0;
  // The stream's owner was lost and this node holds it now (its old cursors
  // get `owner_changed`).
  virtual bool taken_over(const stream_key& key) = 0;
  // A relay serving `key` from `owner`: what readers and writers see of a
  // hub.
  virtual stream_actor spawn_relay(const stream_key& key, const std::string& owner) = 0;
  // A hub was just spawned for a stream this node owns: find out whether
  // another node holds its log and send the hub (adopt_atom, log or null).
  virtual void pull(const stream_key& key, hub_handoff_actor hub) = 0;
  // A source feeding `stream` runs on the stream's owner (one upstream
  // subscription in the whole cluster): when that is another member,
  // subscribe there, answer `req` (from any thread) and return true.
  virtual bool subscribe_elsewhere(const std::string& tenant, const std::string& stream,
                                   const source_subscribe_request_ptr& req) = 0;
  // A source runs here for a subscriber of this node: the lease it gets
  // follows the source when it moves to another member (ADR 0016), so in
  // a cluster every subscription is a hold. Returns the lease to hand out.
  virtual source_lease_ptr hold_here(const std::string& tenant, const std::string& uri,
                                     const std::string& stream, source_lease_ptr lease) = 0;
  // This node's member id.
  virtual std::string self_id() = 0;
  // Replication (ADR 0017): the log shipper of a hub this node just
  // spawned for a stream it owns; nullopt when logs are not replicated.
  virtual std::optional<replicator_actor> spawn_replicator(const stream_key& key,
                                                           replication_sink_actor hub) = 0;
  // Whether `key` is led by an agreed record (ADR 0021): its hub claims
  // before it serves, wherever the stream is pinned.
  virtual bool has_record(const stream_key& key) const = 0;
  // The hub of `key` here was fenced by a newer term `member` holds: the
  // next hub pulls the log from there.
  virtual void fenced(const stream_key& key, const std::string& member) = 0;
  // Blocks: up to `max` newest events of a stream another member owns, read
  // there (a watch's baseline). Only for detached actors, which may block;
  // nullopt when the owner did not answer within `timeout`.
  virtual std::optional<stream_tail> read_tail(const stream_key& key, std::size_t max,
                                               std::chrono::milliseconds timeout) = 0;
};

}  // namespace tidings::actors
