#pragma once

// Payloads exchanged with a hub. They stay inside one process (they carry
// callbacks and shared pointers), so CAF sees them as unsafe message types.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>

#include "actors/stream_key.hpp"
#include "core/cursor.hpp"
#include "core/event.hpp"
#include "core/sse_frame.hpp"
#include "persistence/store.hpp"
#include "persistence/watch_records.hpp"

namespace tidings::actors {

using frame_ptr = std::shared_ptr<const core::sse_frame>;

// Committed events of one stream, encoded once, shared by every session.
struct frame_batch {
  stream_key stream;
  std::uint64_t epoch = 0;
  std::vector<frame_ptr> frames;  // contiguous seqs
  // When the hub learned they were durable (for the delivery lag metric).
  std::chrono::steady_clock::time_point durable_at{};
};
using frame_batch_ptr = std::shared_ptr<const frame_batch>;

// --- publish ---------------------------------------------------------------

enum class publish_outcome {
  appended,      // new events, durable
  replayed,      // Idempotency-Key seen before: the original cursors
  unavailable,   // refused or failed before it was written: not stored
  storage_full,  // refused, not stored: the node's disk is under its reserve
  uncertain,     // not acknowledged, but it may have been stored (a write
                 // its followers did not confirm in time, an owner that did
                 // not answer): a retry with the same Idempotency-Key tells
};

// Anything but appended or replayed: nothing was acknowledged.
inline bool failed(publish_outcome o) {
  return o == publish_outcome::unavailable || o == publish_outcome::uncertain ||
         o == publish_outcome::storage_full;
}

struct publish_result {
  publish_outcome outcome = publish_outcome::appended;
  std::vector<core::cursor> cursors;
  std::string error;
};

struct publish_request {
  std::vector<core::event> events;
  std::string idempotency_key;  // empty: none
  // A watch's notice commits together with the progress it covers.
  std::vector<std::pair<persistence::watch_id, persistence::watch_progress>> progress;
  // A source's read commits together with the events it produced.
  std::vector<persistence::source_snapshot> snapshots;
  // Called once, on the hub's thread: hand the result to your own executor.
  std::function<void(publish_result)> reply;
};
using publish_request_ptr = std::shared_ptr<publish_request>;

// --- handoff (cluster) ------------------------------------------------------

// A stream's retained log as its previous holder handed it over: the new
// owner stores it under an id of its own and continues the same epoch.
struct stream_handoff {
  persistence::stream_meta meta;  // id is the receiver's to choose
  std::vector<persistence::stored_event> events;
  std::vector<std::pair<std::string, persistence::idempotency_record>> idempotency;  // of meta.epoch
  // Called once the receiver has made it durable (the holder may then
  // delete its copy).
  std::function<void()> committed;
  // No log came, and the receiver's own copy is a follower's that cannot
  // be shown complete (ADR 0017): it is dropped and the stream starts a
  // new epoch rather than reuse seqs another copy may have handed out.
  bool fresh = false;
};
using stream_handoff_ptr = std::shared_ptr<const stream_handoff>;

// --- reading and subscribing -------------------------------------------------

enum class fetch_status {
  page,       // frames after the cursor; not caught up yet: fetch again
  caught_up,  // frames up to head; the sink now gets every later batch
  resync,     // the cursor cannot be served; see reason
};

struct fetch_reply {
  std::uint64_t subscription = 0;
  fetch_status status = fetch_status::page;
  std::uint64_t epoch = 0;        // the stream's epoch (0: stream not created)
  core::cursor head;              // committed head when the reply was made
  std::vector<frame_ptr> frames;  // in seq order, all > the requested cursor
  std::string reason;             // for resync: cursor_too_old, epoch_changed, ...
  bool registered = false;        // the sink now receives this stream's batches
  // Who registered it (a relay, or a hub that took over a forwarded fetch):
  // where the subscriber's unsubscribe must go.
  caf::actor_addr registered_at;
};

// Where a hub sends what a subscriber asked for: one per I/O thread. Calls
// come from hub threads and must only hand work over (post), never block.
class fanout_sink {
 public:
  virtual ~fanout_sink() = default;
  virtual void deliver(frame_batch_ptr batch) = 0;
  virtual void fetched(stream_key stream, fetch_reply reply) = 0;
  // The stream's owner changed (cluster): `from` registered this sink and no
  // longer delivers. Its subscribers fetch again from their cursors.
  virtual void moved(stream_key stream, caf::actor_addr from) = 0;
};
using fanout_sink_ptr = std::shared_ptr<fanout_sink>;

struct fetch_request {
  std::uint64_t subscription = 0;  // echoed in the reply
  fanout_sink_ptr sink;
  // nullopt: start at the head (live only). Epoch 0: the stream did not
  // exist for this subscriber yet, so everything of the current epoch.
  std::optional<core::cursor> after;
  std::size_t max_frames = 256;
  std::size_t max_bytes = 1 << 20;  // a page stops here, but has at least one frame
  // When true, a check only: the reply carries head and any resync, no
  // frames, and nothing is registered.
  bool probe = false;
};
using fetch_request_ptr = std::shared_ptr<fetch_request>;

}  // namespace tidings::actors
