#pragma once

// An append of a stream's log from its owner's shipper to a follower
// (ADR 0017), as the follower's node actor decoded it from the wire once
// (proto::ReplicaAppend); the replica actor applies it.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/stream_key.hpp"
#include "persistence/store.hpp"

namespace tidings::cluster {

struct replica_append {
  actors::stream_key stream;
  std::string owner;       // the sender: taken only from the member seen as the owner
  std::uint64_t term = 0;  // the sender's term: an older one is fenced
  std::uint64_t epoch = 0;
  std::uint64_t prev_seq = 0;  // the log's head before these events
  std::vector<persistence::stored_event> events;
  std::uint64_t first_seq = 0;  // retention: the copy drops what is before
  std::uint64_t retention_count = 0;
  std::int64_t retention_age_ms = 0;
  std::int64_t created_ms = 0;
  std::vector<std::pair<std::string, persistence::idempotency_record>> idempotency;
  bool synced = false;  // the copy holds the whole log once this is written
  bool reset = false;   // starts the log (from first_seq): any other copy goes
  // The log the sender's term started from.
  std::uint64_t base_term = 0;
  std::string base_owner;
  std::uint64_t base_head = 0;
};
// Local only: the node actor hands it to the stream's replica actor.
using replica_append_ptr = std::shared_ptr<replica_append>;

}  // namespace tidings::cluster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::cluster::replica_append_ptr)
