#pragma once

// The node's RocksDB database (DESIGN.md "Storage"). Thread-safe: RocksDB is,
// and the few in-memory fields are guarded. Every rocksdb::Status is turned
// into a persistence::status the caller must check.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/event.hpp"
#include "persistence/status.hpp"
#include "persistence/watch_records.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace tidings::persistence {

class idempotency_expiry;

// How long an Idempotency-Key answers a retry by default (ADR 0005's
// amendment): older records go at their family's next compaction (at
// least daily), so a key may answer a little longer, never shorter.
inline constexpr std::chrono::hours default_idempotency_ttl{24};

enum class durability {
  sync,   // WAL fsynced before a write is acknowledged (group commit shares it)
  batch,  // WAL written before ack; fsynced a few ms later
  none,   // no WAL: acknowledged from memory, lost on a crash
};
std::optional<durability> parse_durability(std::string_view text);
std::string_view durability_name(durability d);

enum class revocation_kind { jti, subject };
struct revocation {
  std::string tenant;
  revocation_kind kind = revocation_kind::jti;
  std::string value;
  std::int64_t revoked_at_s = 0;
};

struct stream_meta {
  std::string tenant;
  std::string name;
  std::uint64_t id = 0;
  std::uint64_t epoch = 0;
  std::uint64_t first_seq = 1;  // head_seq + 1 when empty
  std::uint64_t head_seq = 0;
  std::uint64_t retention_count = 0;
  std::int64_t retention_age_ms = 0;
  std::int64_t created_ms = 0;
  // Replication (ADR 0017): the ownership term the log was last written
  // in, and the member that wrote it then. A copy whose term_owner is
  // another member is a follower's copy; "" is this node's own (and what
  // stores from before replication hold).
  std::uint64_t term = 0;
  std::string term_owner;
};

struct stored_event {
  std::uint64_t seq = 0;
  core::event ev;
};

struct idempotency_record {
  std::uint64_t epoch = 0;
  std::uint64_t first_seq = 0;
  std::uint64_t count = 0;
  std::int64_t time_ms = 0;
};

// One atomic unit of work, built by a hub and applied by the group committer.
struct write_set {
  // Delete a stream's meta (tenant, name): its log was handed to another
  // node (cluster). Applied before `meta`.
  std::optional<std::pair<std::string, std::string>> meta_delete;
  std::optional<stream_meta> meta;  // put (create or update) the stream's meta
  std::uint64_t stream_id = 0;
  std::vector<stored_event> events;  // appended under stream_id
  std::uint64_t trim_before = 0;     // if > 0: delete events [0, trim_before) of stream_id
  // Delete the events after this seq (a follower dropping the tail an
  // older term wrote and the new owner never had). Applied before `events`.
  std::optional<std::uint64_t> truncate_after;
  std::vector<std::pair<std::string, idempotency_record>> idempotency;  // key -> record
  // Watch records ride in the same batch, so a notice and the cursor it
  // covers commit together (or not at all).
  std::vector<watch_spec> watch_puts;
  std::vector<watch_id> watch_deletes;  // spec, cursors and snapshot
  std::vector<std::pair<watch_id, watch_progress>> progress_puts;
  std::vector<source_snapshot> snapshot_puts;
  // The stream's own log (a hub's appends and trims): once one such write
  // of stream_id is refused or fails, the group committer refuses the
  // stream's later ones too until release_stream(), so that no later write
  // lands past the hole the failed one left.
  bool fence_on_failure = false;
};

struct storage_stats {
  std::uint64_t sst_bytes = 0;        // every family's table files
  std::uint64_t live_data_bytes = 0;  // estimate, without garbage
  std::uint64_t memtable_bytes = 0;   // all memtables, flushed or not
  std::uint64_t pending_compaction_bytes = 0;
  bool write_stopped = false;            // writes are stalled outright
  std::uint64_t delayed_write_rate = 0;  // bytes/s while slowed down; 0: not slowed
  std::uint64_t flush_pending = 0;       // families waiting for a flush
  std::uint64_t running_flushes = 0;
  std::uint64_t running_compactions = 0;
};

class store {
 public:
  // Creates the directory and the column families when missing; reopens an
  // existing database with all of its families.
  static status open(const std::string& dir, durability d, std::unique_ptr<store>* out);
  ~store();
  store(const store&) = delete;
  store& operator=(const store&) = delete;

  durability mode() const { return durability_; }

  // A fresh id for a new stream. Ids are reserved in blocks of
  // `stream_id_block` with one synced write each and handed out from memory,
  // so creating a stream costs no fsync of its own; a restart skips the
  // rest of the block (ids are keys, never counted, so gaps are harmless).
  status allocate_stream_id(std::uint64_t* id);
  static constexpr std::uint64_t stream_id_block = 1024;

  status load_streams(std::vector<stream_meta>* out);
  status get_stream(const std::string& tenant, const std::string& name, std::optional<stream_meta>* out);

  // Up to `max` events with seq > after_seq, in seq order, stopping before
  // any seq > up_to_seq.
  status read_events(std::uint64_t stream_id, std::uint64_t after_seq, std::uint64_t up_to_seq,
                     std::size_t max, std::vector<stored_event>* out);

  // Up to `max` events with seq <= up_to_seq, newest first.
  status read_events_backward(std::uint64_t stream_id, std::uint64_t up_to_seq, std::size_t max,
                              std::vector<stored_event>* out);

  status load_watches(std::vector<watch_spec>* out);
  // The progress of a watch on `stream`; nullopt when none was committed.
  status get_watch_progress(const watch_id& id, const std::string& stream,
                            std::optional<watch_progress>* out);

  // A source's last read; nullopt when none was stored.
  status get_source_snapshot(const std::string& tenant, const std::string& source_key,
                             std::optional<path_state>* out);

  status get_idempotency(std::uint64_t stream_id, const std::string& key,
                         std::optional<idempotency_record>* out);
  // The newest `max` (by epoch, then seq) of a stream's idempotency records
  // that `keep` accepts (all: none given), oldest first, for a handoff or a
  // catch-up: a retry is likeliest for what was written last. Reads every
  // record of the stream (docs/cluster.md, Limits).
  status list_idempotency(std::uint64_t stream_id, std::size_t max,
                          const std::function<bool(const idempotency_record&)>& keep,
                          std::vector<std::pair<std::string, idempotency_record>>* out);

  // Token revocations (broker/auth): written at once and fsynced.
  status put_revocation(const revocation& r);
  status load_revocations(std::vector<revocation>* out);

  // The node's id (admin views, stream owners), kept in the meta family so
  // a restart keeps it; nullopt before the first put.
  status get_node_id(std::optional<std::string>* out);
  status put_node_id(const std::string& id);
  // The key a single node derives generated webhook tokens from (issue 24),
  // kept so that they survive a restart; nullopt before the first put.
  status get_webhook_token_key(std::optional<std::string>* out);
  status put_webhook_token_key(const std::string& key);

  // RocksDB's estimate of the bytes a stream's events take, memtables
  // included (files are counted by the blocks the range touches).
  status approximate_event_bytes(std::uint64_t stream_id, std::uint64_t* out);

  // Idempotency records older than `ttl` (by their time) are dropped at
  // their family's next compaction; default_idempotency_ttl until set.
  void set_idempotency_ttl(std::chrono::milliseconds ttl);
  // Compacts the idempotency family now, dropping what expired (the
  // expiry otherwise runs with RocksDB's own compactions, at least daily).
  status compact_idempotency();

  // RocksDB's own figures for the metrics (read at each scrape; cheap).
  storage_stats stats() const;

  // Adds one write_set to a batch (the group committer merges many).
  void add_to_batch(const write_set& ws, rocksdb::WriteBatch& batch) const;
  // Writes a batch under the store's durability (sync: fsynced).
  status write(rocksdb::WriteBatch& batch);
  // Fsyncs the WAL (the `batch` durability's deferred sync).
  status sync_wal();
  // After a failed write: RocksDB's recovery from its background error
  // (ok when there is none).
  status resume();

 private:
  // A named value of the meta family, written synced.
  status get_meta_value(std::string_view name, std::optional<std::string>* out);
  status put_meta_value(std::string_view name, const std::string& value);

  store() = default;
  durability durability_ = durability::sync;
  // RocksDB holds a raw pointer to it: it must outlive db_.
  std::shared_ptr<idempotency_expiry> expiry_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> families_;
  std::mutex stream_ids_mutex_;
  std::uint64_t next_stream_id_ = 0;  // the next id to hand out
  std::uint64_t reserved_end_ = 0;    // ids below this are reserved on disk
};

}  // namespace tidings::persistence
