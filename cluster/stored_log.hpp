#pragma once

// A stream's log as this node's store holds it, read in chunks: what a
// member taking the stream over pulls (ADR 0015), what another node reads
// for its history views, and the copy a forced election renumbers
// (ADR 0021).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/messages.hpp"
#include "actors/stream_key.hpp"
#include "persistence/store.hpp"

namespace tidings::cluster {

struct log_chunk {
  enum class kind {
    none,   // no copy here
    log,    // meta and a chunk of events
    retry,  // not now (the holder is not ready, or could not read)
  };
  kind status = kind::none;
  // The log's meta without the store's id (the receiver chooses its own);
  // term_owner names this node when the log is its own.
  persistence::stream_meta meta;
  // With the first chunk only: the Idempotency-Keys of the log's epoch.
  std::vector<std::pair<std::string, persistence::idempotency_record>> idempotency;
  std::vector<persistence::stored_event> events;
  bool more = false;  // another chunk follows the last event here

  // The asker tries again later.
  static log_chunk retry_later() {
    log_chunk c;
    c.status = kind::retry;
    return c;
  }
};

// A member taking `stream` over asks for its log after `after_seq`;
// `by_record`: the stream's record lists this member in its ISR (ADR 0021),
// so its copy is whole whatever it remembers of that.
struct take_request {
  actors::stream_key stream;
  std::string requester;
  std::uint64_t after_seq = 0;
  bool by_record = false;
};

// At most this many events go in one chunk, and ten times as many keys.
inline constexpr std::size_t chunk_events = 1000;

// Up to `max` events of `key`'s log after `after_seq`, with its meta.
log_chunk read_chunk(persistence::store& store, const actors::stream_key& key, const std::string& self_id,
                     std::uint64_t after_seq, std::size_t max);

// This node's copy of `key` as a log of epoch `log_epoch` (a forced
// election's), without the old epoch's Idempotency-Keys (their cursors are
// gone); an empty log in that epoch when there is no copy; null when the
// store cannot be read.
std::shared_ptr<actors::stream_handoff> renumbered_copy(persistence::store& store,
                                                        const actors::stream_key& key,
                                                        const std::string& self_id, std::uint64_t log_epoch);

}  // namespace tidings::cluster
