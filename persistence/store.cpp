#include "persistence/store.hpp"

#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/sst_file_manager.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <system_error>
#include <tuple>

#include "persistence/keys.hpp"
#include "proto/tidings.pb.h"

namespace tidings::persistence {

namespace {

// Index of each family in store::families_; any other family found on disk
// (added by a later version) is opened after these so a reopen never fails.
enum family : std::size_t {
  default_cf,
  streams_cf,
  events_cf,
  idempotency_cf,
  meta_cf,
  watches_cf,
  cursors_cf,
  snapshots_cf,
  revocations_cf,
  known_families
};
const char* const family_names[known_families] = {"default", "streams", "events",    "idempotency", "meta",
                                                  "watches", "cursors", "snapshots", "revocations"};

constexpr std::string_view schema_version_key = "schema_version";
constexpr std::string_view schema_version = "1";
constexpr std::string_view next_stream_id_key = "next_stream_id";
constexpr std::string_view node_id_key = "node_id";
constexpr std::string_view webhook_token_key_key = "webhook_token_key";

status from(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return {};
  return status::error(std::string(what) + ": " + s.ToString());
}

rocksdb::Slice slice(std::string_view s) {
  return {s.data(), s.size()};
}

// WriteBatch puts fail only for a key or value over 4 GiB, which request
// size limits rule out long before storage; treat it as a broken invariant.
void must(const rocksdb::Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "tidings: WriteBatch rejected an update: %s\n", s.ToString().c_str());
  std::abort();
}

std::string serialize(const stream_meta& m) {
  proto::StreamMeta p;
  p.set_id(m.id);
  p.set_epoch(m.epoch);
  p.set_first_seq(m.first_seq);
  p.set_head_seq(m.head_seq);
  p.set_retention_count(m.retention_count);
  p.set_retention_age_ms(m.retention_age_ms);
  p.set_created_ms(m.created_ms);
  p.set_term(m.term);
  p.set_term_owner(m.term_owner);
  return p.SerializeAsString();
}

bool parse(std::string_view bytes, std::string tenant, std::string name, stream_meta* out) {
  proto::StreamMeta p;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return false;
  out->tenant = std::move(tenant);
  out->name = std::move(name);
  out->id = p.id();
  out->epoch = p.epoch();
  out->first_seq = p.first_seq();
  out->head_seq = p.head_seq();
  out->retention_count = p.retention_count();
  out->retention_age_ms = p.retention_age_ms();
  out->created_ms = p.created_ms();
  out->term = p.term();
  out->term_owner = p.term_owner();
  return true;
}

std::string serialize(const core::event& e) {
  proto::StoredEvent p;
  p.set_path(e.path);
  p.set_type(e.type);
  p.set_data_json(e.data_json);
  p.set_time_ms(e.time_ms);
  return p.SerializeAsString();
}

bool parse(std::string_view bytes, core::event* out) {
  proto::StoredEvent p;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return false;
  out->path = std::move(*p.mutable_path());
  out->type = std::move(*p.mutable_type());
  out->data_json = std::move(*p.mutable_data_json());
  out->time_ms = p.time_ms();
  return true;
}

std::string serialize(const idempotency_record& r) {
  proto::IdempotencyRecord p;
  p.set_epoch(r.epoch);
  p.set_first_seq(r.first_seq);
  p.set_count(r.count);
  p.set_time_ms(r.time_ms);
  return p.SerializeAsString();
}

bool parse(std::string_view bytes, idempotency_record* out) {
  proto::IdempotencyRecord p;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return false;
  out->epoch = p.epoch();
  out->first_seq = p.first_seq();
  out->count = p.count();
  out->time_ms = p.time_ms();
  return true;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <class Message>
bool parse_message(std::string_view bytes, Message* p) {
  return bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
         p->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

std::string serialize(const watch_spec& w) {
  proto::WatchSpec p;
  p.set_uri(w.uri);
  p.set_has_on_event(w.on_event.has_value());
  if (w.on_event) p.set_on_event(*w.on_event);
  p.set_debounce_ms(w.debounce_ms);
  p.set_max_wait_ms(w.max_wait_ms);
  p.set_created_ms(w.created_ms);
  return p.SerializeAsString();
}

bool parse(std::string_view bytes, watch_id id, watch_spec* out) {
  proto::WatchSpec p;
  if (!parse_message(bytes, &p)) return false;
  out->id = std::move(id);
  out->uri = p.uri();
  if (p.has_on_event())
    out->on_event.emplace(p.on_event());
  else
    out->on_event.reset();
  out->debounce_ms = p.debounce_ms();
  out->max_wait_ms = p.max_wait_ms();
  out->created_ms = p.created_ms();
  return true;
}

std::string serialize(const path_state& state) {
  proto::WatchPathState p;
  p.set_shape(state.shape);
  p.set_state_json(state.state_json);
  p.set_has_last_seq(state.last_seq.has_value());
  if (state.last_seq) p.set_last_seq(*state.last_seq);
  return p.SerializeAsString();
}

bool parse(std::string_view bytes, std::string path, path_state* out) {
  proto::WatchPathState p;
  if (!parse_message(bytes, &p)) return false;
  *out = path_state{std::move(path), p.shape(), p.state_json(), std::nullopt};
  if (p.has_last_seq()) out->last_seq = p.last_seq();
  return true;
}

std::string serialize_cursor(const watch_progress& w) {
  proto::ConsumerCursor p;
  p.set_epoch(w.cursor.epoch);
  p.set_seq(w.cursor.seq);
  p.set_shape(w.shape);
  return p.SerializeAsString();
}

// The smallest key greater than every key starting with `prefix`, for a
// range delete. Our prefixes end in '\0', so incrementing the last byte works.
std::string prefix_end(std::string prefix) {
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

// Drops idempotency records older than the TTL when RocksDB compacts
// their family (ADR 0005's amendment); called on its compaction threads.
class idempotency_expiry final : public rocksdb::CompactionFilter {
 public:
  std::atomic<std::int64_t> ttl_ms{std::chrono::milliseconds(default_idempotency_ttl).count()};

  bool Filter(int /*level*/, const rocksdb::Slice& /*key*/, const rocksdb::Slice& value,
              std::string* /*new_value*/, bool* /*value_changed*/) const override {
    idempotency_record record;
    if (!parse(value.ToStringView(), &record)) return false;  // not ours to judge
    return record.time_ms < wall_ms() - ttl_ms.load(std::memory_order_relaxed);
  }
  const char* Name() const override { return "tidings.idempotency_expiry"; }
};

std::string_view durability_name(durability d) {
  switch (d) {
    case durability::sync:
      return "sync";
    case durability::batch:
      return "batch";
    case durability::none:
      return "none";
  }
  return "sync";
}

std::optional<durability> parse_durability(std::string_view text) {
  for (auto d : {durability::sync, durability::batch, durability::none})
    if (text == durability_name(d)) return d;
  return std::nullopt;
}

status store::open(const std::string& dir, durability d, std::unique_ptr<store>* out) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return status::error("create " + dir + ": " + ec.message());

  rocksdb::Options options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  // Tracks table files so that a compaction starts only with room for its
  // output, and lets RocksDB recover by itself from a background flush or
  // compaction that ran out of space once space returns (write_guard keeps
  // our own writes from getting that far).
  options.sst_file_manager.reset(rocksdb::NewSstFileManager(rocksdb::Env::Default()));

  std::vector<std::string> names(family_names, family_names + known_families);
  if (std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", ec)) {
    std::vector<std::string> existing;
    if (auto s =
            from(rocksdb::DB::ListColumnFamilies(options, dir, &existing), "list column families of " + dir);
        !s.ok())
      return s;
    for (auto& name : existing)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::unique_ptr<store> db(new store());
  db->durability_ = d;
  db->expiry_ = std::make_shared<idempotency_expiry>();
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.reserve(names.size());
  for (auto& name : names) {
    rocksdb::ColumnFamilyOptions family(options);
    if (name == family_names[idempotency_cf]) {
      family.compaction_filter = db->expiry_.get();
      // Files no write touches are compacted (and so expired) daily too.
      family.periodic_compaction_seconds = 86'400;  // a day
    }
    descriptors.emplace_back(name, family);
  }
  rocksdb::DB* raw = nullptr;
  if (auto s = from(rocksdb::DB::Open(options, dir, descriptors, &db->families_, &raw), "open " + dir);
      !s.ok())
    return s;
  db->db_.reset(raw);

  std::string version;
  auto got =
      db->db_->Get(rocksdb::ReadOptions(), db->families_[meta_cf], slice(schema_version_key), &version);
  if (got.IsNotFound()) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (auto s =
            from(db->db_->Put(wo, db->families_[meta_cf], slice(schema_version_key), slice(schema_version)),
                 "write schema version");
        !s.ok())
      return s;
  } else if (!got.ok()) {
    return from(got, "read schema version");
  } else if (version != schema_version) {
    return status::error("unsupported schema version " + version + " in " + dir);
  }
  *out = std::move(db);
  return {};
}

store::~store() {
  if (!db_) return;
  for (auto* handle : families_) {
    // Nothing useful to do with a failure while closing; the WAL has the data.
    [[maybe_unused]] auto s = db_->DestroyColumnFamilyHandle(handle);
  }
  families_.clear();
  [[maybe_unused]] auto s = db_->Close();
  db_.reset();
}

status store::allocate_stream_id(std::uint64_t* id) {
  std::lock_guard lock(stream_ids_mutex_);
  if (next_stream_id_ == reserved_end_) {
    // The stored value is the first id not yet reserved by any run.
    std::string value;
    std::uint64_t next = 1;
    auto got = db_->Get(rocksdb::ReadOptions(), families_[meta_cf], slice(next_stream_id_key), &value);
    if (got.ok()) {
      if (value.size() != 8) return status::error("corrupt next_stream_id in meta");
      next = read_be64(value);
    } else if (!got.IsNotFound()) {
      return from(got, "read next_stream_id");
    }
    if (next > std::numeric_limits<std::uint64_t>::max() - stream_id_block)
      return status::error("stream ids exhausted");
    std::string updated;
    append_be64(updated, next + stream_id_block);
    // Synced whatever the durability: a reused id would mix two streams' events.
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (auto s = from(db_->Put(wo, families_[meta_cf], slice(next_stream_id_key), updated),
                      "write next_stream_id");
        !s.ok())
      return s;
    next_stream_id_ = next;
    reserved_end_ = next + stream_id_block;
  }
  *id = next_stream_id_++;
  return {};
}

status store::load_streams(std::vector<stream_meta>* out) {
  out->clear();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_[streams_cf]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto key = it->key().ToStringView();
    auto parts = parse_stream_key(key);
    stream_meta meta;
    if (!parts || !parse(it->value().ToStringView(), std::move(parts->tenant), std::move(parts->name), &meta))
      return status::error("corrupt stream record in the streams family");
    out->push_back(std::move(meta));
  }
  return from(it->status(), "scan streams");
}

status store::get_stream(const std::string& tenant, const std::string& name,
                         std::optional<stream_meta>* out) {
  out->reset();
  std::string value;
  auto got = db_->Get(rocksdb::ReadOptions(), families_[streams_cf], stream_key(tenant, name), &value);
  if (got.IsNotFound()) return {};
  if (!got.ok()) return from(got, "read stream " + name);
  stream_meta meta;
  if (!parse(value, tenant, name, &meta)) return status::error("corrupt stream record for " + name);
  *out = std::move(meta);
  return {};
}

status store::read_events(std::uint64_t stream_id, std::uint64_t after_seq, std::uint64_t up_to_seq,
                          std::size_t max, std::vector<stored_event>* out) {
  out->clear();
  if (max == 0 || after_seq >= up_to_seq) return {};

  constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();
  // The bound's bytes must outlive the iterator, which keeps only a Slice.
  std::string upper;
  if (up_to_seq < u64_max)
    upper = event_key(stream_id, up_to_seq + 1);
  else if (stream_id < u64_max)
    upper = event_key_prefix(stream_id + 1);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  if (!upper.empty()) ro.iterate_upper_bound = &upper_slice;

  std::string prefix = event_key_prefix(stream_id);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, families_[events_cf]));
  for (it->Seek(event_key(stream_id, after_seq + 1)); it->Valid() && out->size() < max; it->Next()) {
    auto key = it->key().ToStringView();
    if (key.size() != event_key_size || !key.starts_with(prefix)) break;
    stored_event ev;
    ev.seq = read_be64(key.substr(8));
    if (ev.seq > up_to_seq) break;
    if (!parse(it->value().ToStringView(), &ev.ev))
      return status::error("corrupt event " + std::to_string(ev.seq) + " of stream id " +
                           std::to_string(stream_id));
    out->push_back(std::move(ev));
  }
  return from(it->status(), "scan events");
}

status store::read_events_backward(std::uint64_t stream_id, std::uint64_t up_to_seq, std::size_t max,
                                   std::vector<stored_event>* out) {
  out->clear();
  if (max == 0 || up_to_seq == 0) return {};
  std::string prefix = event_key_prefix(stream_id);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_[events_cf]));
  for (it->SeekForPrev(event_key(stream_id, up_to_seq)); it->Valid() && out->size() < max; it->Prev()) {
    auto key = it->key().ToStringView();
    if (key.size() != event_key_size || !key.starts_with(prefix)) break;
    stored_event ev;
    ev.seq = read_be64(key.substr(8));
    if (!parse(it->value().ToStringView(), &ev.ev))
      return status::error("corrupt event " + std::to_string(ev.seq) + " of stream id " +
                           std::to_string(stream_id));
    out->push_back(std::move(ev));
  }
  return from(it->status(), "scan events backward");
}

status store::load_watches(std::vector<watch_spec>* out) {
  out->clear();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_[watches_cf]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto parts = parse_stream_key(it->key().ToStringView());
    watch_spec spec;
    if (!parts ||
        !parse(it->value().ToStringView(), {std::move(parts->tenant), std::move(parts->name)}, &spec))
      return status::error("corrupt watch record in the watches family");
    out->push_back(std::move(spec));
  }
  return from(it->status(), "scan watches");
}

status store::get_watch_progress(const watch_id& id, const std::string& stream,
                                 std::optional<watch_progress>* out) {
  out->reset();
  std::string value;
  auto got = db_->Get(rocksdb::ReadOptions(), families_[cursors_cf],
                      watch_cursor_key(id.tenant, id.name, stream), &value);
  if (got.IsNotFound()) return {};
  if (!got.ok()) return from(got, "read the cursor of watch " + id.name);
  proto::ConsumerCursor c;
  if (!parse_message(value, &c)) return status::error("corrupt cursor of watch " + id.name);
  watch_progress progress;
  progress.stream = stream;
  progress.cursor = {c.epoch(), c.seq()};
  progress.shape = c.shape();
  auto prefix = watch_snapshot_key(id.tenant, id.name, "");
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_[snapshots_cf]));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    path_state state;
    auto path = std::string(it->key().ToStringView().substr(prefix.size()));
    if (!parse(it->value().ToStringView(), std::move(path), &state))
      return status::error("corrupt snapshot of watch " + id.name);
    progress.paths.push_back(std::move(state));
  }
  if (auto s = from(it->status(), "scan the snapshot of watch " + id.name); !s.ok()) return s;
  *out = std::move(progress);
  return {};
}

status store::get_source_snapshot(const std::string& tenant, const std::string& source_key,
                                  std::optional<path_state>* out) {
  out->reset();
  std::string value;
  auto got = db_->Get(rocksdb::ReadOptions(), families_[snapshots_cf],
                      source_snapshot_key(tenant, source_key), &value);
  if (got.IsNotFound()) return {};
  if (!got.ok()) return from(got, "read the snapshot of source " + source_key);
  path_state state;
  if (!parse(value, source_key, &state)) return status::error("corrupt snapshot of source " + source_key);
  *out = std::move(state);
  return {};
}

status store::get_idempotency(std::uint64_t stream_id, const std::string& key,
                              std::optional<idempotency_record>* out) {
  out->reset();
  std::string value;
  auto got =
      db_->Get(rocksdb::ReadOptions(), families_[idempotency_cf], idempotency_key(stream_id, key), &value);
  if (got.IsNotFound()) return {};
  if (!got.ok()) return from(got, "read idempotency record");
  idempotency_record record;
  if (!parse(value, &record)) return status::error("corrupt idempotency record");
  *out = record;
  return {};
}

void store::set_idempotency_ttl(std::chrono::milliseconds ttl) {
  expiry_->ttl_ms.store(ttl.count(), std::memory_order_relaxed);
}

status store::compact_idempotency() {
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  return from(db_->CompactRange(o, families_[idempotency_cf], nullptr, nullptr),
              "compact idempotency records");
}

status store::list_idempotency(std::uint64_t stream_id, std::size_t max,
                               const std::function<bool(const idempotency_record&)>& keep,
                               std::vector<std::pair<std::string, idempotency_record>>* out) {
  out->clear();
  if (max == 0) return {};
  // The newest `max` by log position: a heap whose top is the oldest kept,
  // replaced whenever a newer one comes. Keys are in random order against
  // seqs, so every record of the stream is read (they expire by age, ADR
  // 0005, so their number is bounded by a day of the stream's writes).
  using entry = std::pair<std::string, idempotency_record>;
  const auto newer = [](const entry& a, const entry& b) {
    return std::tie(a.second.epoch, a.second.first_seq) > std::tie(b.second.epoch, b.second.first_seq);
  };
  auto prefix = idempotency_key(stream_id, "");
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_[idempotency_cf]));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    auto key = it->key().ToStringView();
    if (!key.starts_with(prefix)) break;
    idempotency_record record;
    if (!parse(it->value().ToStringView(), &record)) return status::error("corrupt idempotency record");
    if (keep && !keep(record)) continue;
    entry e{std::string(key.substr(prefix.size())), record};
    if (out->size() < max) {
      out->push_back(std::move(e));
      std::push_heap(out->begin(), out->end(), newer);
    } else if (newer(e, out->front())) {
      std::pop_heap(out->begin(), out->end(), newer);
      out->back() = std::move(e);
      std::push_heap(out->begin(), out->end(), newer);
    }
  }
  // Oldest first, as a log is read.
  std::sort_heap(out->begin(), out->end(), newer);
  std::reverse(out->begin(), out->end());
  return from(it->status(), "list idempotency records");
}

void store::add_to_batch(const write_set& ws, rocksdb::WriteBatch& batch) const {
  // Deletes first: a replaced watch is deleted and put again in one set.
  for (const auto& id : ws.watch_deletes) {
    must(batch.Delete(families_[watches_cf], stream_key(id.tenant, id.name)));
    auto cursors = watch_cursor_key(id.tenant, id.name, "");
    must(batch.DeleteRange(families_[cursors_cf], cursors, prefix_end(cursors)));
    auto snapshot = watch_snapshot_key(id.tenant, id.name, "");
    must(batch.DeleteRange(families_[snapshots_cf], snapshot, prefix_end(snapshot)));
  }
  for (const auto& spec : ws.watch_puts)
    must(batch.Put(families_[watches_cf], stream_key(spec.id.tenant, spec.id.name), serialize(spec)));
  for (const auto& [id, progress] : ws.progress_puts) {
    must(batch.Put(families_[cursors_cf], watch_cursor_key(id.tenant, id.name, progress.stream),
                   serialize_cursor(progress)));
    if (progress.replace_paths) {
      auto snapshot = watch_snapshot_key(id.tenant, id.name, "");
      must(batch.DeleteRange(families_[snapshots_cf], snapshot, prefix_end(snapshot)));
    }
    for (const auto& state : progress.paths)
      must(batch.Put(families_[snapshots_cf], watch_snapshot_key(id.tenant, id.name, state.path),
                     serialize(state)));
  }
  for (const auto& snap : ws.snapshot_puts)
    must(batch.Put(families_[snapshots_cf], source_snapshot_key(snap.tenant, snap.key),
                   serialize(snap.state)));
  if (ws.meta_delete)
    must(batch.Delete(families_[streams_cf], stream_key(ws.meta_delete->first, ws.meta_delete->second)));
  if (ws.meta)
    must(batch.Put(families_[streams_cf], stream_key(ws.meta->tenant, ws.meta->name), serialize(*ws.meta)));
  if (ws.truncate_after)
    must(batch.DeleteRange(families_[events_cf], event_key(ws.stream_id, *ws.truncate_after + 1),
                           event_key(ws.stream_id, std::numeric_limits<std::uint64_t>::max())));
  for (const auto& ev : ws.events)
    must(batch.Put(families_[events_cf], event_key(ws.stream_id, ev.seq), serialize(ev.ev)));
  if (ws.trim_before > 0)
    must(batch.DeleteRange(families_[events_cf], event_key(ws.stream_id, 0),
                           event_key(ws.stream_id, ws.trim_before)));
  for (const auto& [key, record] : ws.idempotency)
    must(batch.Put(families_[idempotency_cf], idempotency_key(ws.stream_id, key), serialize(record)));
}

status store::write(rocksdb::WriteBatch& batch) {
  rocksdb::WriteOptions wo;
  wo.sync = durability_ == durability::sync;
  wo.disableWAL = durability_ == durability::none;
  return from(db_->Write(wo, &batch), "write batch");
}

status store::resume() {
  return from(db_->Resume(), "resume");
}

status store::sync_wal() {
  if (durability_ == durability::none) return {};
  return from(db_->SyncWAL(), "sync WAL");
}

namespace {

std::string revocation_key(const revocation& r) {
  std::string key = r.tenant;
  key += '\0';
  key += r.kind == revocation_kind::jti ? 'j' : 's';
  key += '\0';
  key += r.value;
  return key;
}

}  // namespace

// Revocations are rare and must outlive a crash the moment they are
// acknowledged, so they skip the group committer and are always fsynced.
status store::put_revocation(const revocation& r) {
  proto::Revocation value;
  value.set_revoked_at_s(r.revoked_at_s);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return from(db_->Put(wo, families_[revocations_cf], revocation_key(r), value.SerializeAsString()),
              "write revocation");
}

status store::load_revocations(std::vector<revocation>* out) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_[revocations_cf]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto key = it->key().ToStringView();
    auto first = key.find('\0');
    if (first == std::string_view::npos || first + 2 >= key.size() || key[first + 2] != '\0')
      return status::error("corrupt revocation key");
    proto::Revocation value;
    if (!value.ParseFromString(it->value().ToString())) return status::error("corrupt revocation record");
    revocation r;
    r.tenant = std::string(key.substr(0, first));
    r.kind = key[first + 1] == 'j' ? revocation_kind::jti : revocation_kind::subject;
    r.value = std::string(key.substr(first + 3));
    r.revoked_at_s = value.revoked_at_s();
    out->push_back(std::move(r));
  }
  return from(it->status(), "read revocations");
}

status store::get_meta_value(std::string_view name, std::optional<std::string>* out) {
  out->reset();
  std::string value;
  auto got = db_->Get(rocksdb::ReadOptions(), families_[meta_cf], slice(name), &value);
  if (got.IsNotFound()) return {};
  if (!got.ok()) return from(got, "read " + std::string(name));
  if (value.empty()) return status::error("corrupt " + std::string(name) + " in meta");
  *out = std::move(value);
  return {};
}

status store::put_meta_value(std::string_view name, const std::string& value) {
  // Synced whatever the durability: these name the node and its secrets.
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return from(db_->Put(wo, families_[meta_cf], slice(name), slice(value)), "write " + std::string(name));
}

status store::get_node_id(std::optional<std::string>* out) {
  return get_meta_value(node_id_key, out);
}

status store::put_node_id(const std::string& id) {
  return put_meta_value(node_id_key, id);
}

status store::get_webhook_token_key(std::optional<std::string>* out) {
  return get_meta_value(webhook_token_key_key, out);
}

status store::put_webhook_token_key(const std::string& key) {
  return put_meta_value(webhook_token_key_key, key);
}

status store::approximate_event_bytes(std::uint64_t stream_id, std::uint64_t* out) {
  auto begin = event_key(stream_id, 0);
  auto end = event_key(stream_id, std::numeric_limits<std::uint64_t>::max());
  rocksdb::Range range(begin, end);
  rocksdb::SizeApproximationOptions options;
  options.include_memtables = true;
  options.include_files = true;
  std::uint64_t size = 0;
  if (auto s = from(db_->GetApproximateSizes(options, families_[events_cf], &range, 1, &size),
                    "estimate the size of stream " + std::to_string(stream_id));
      !s.ok())
    return s;
  *out = size;
  return {};
}

storage_stats store::stats() const {
  storage_stats out;
  auto summed = [&](const rocksdb::Slice& property) {
    std::uint64_t total = 0;
    for (auto* cf : families_) {
      std::uint64_t v = 0;
      if (db_->GetIntProperty(cf, property, &v)) total += v;
    }
    return total;
  };
  auto db_wide = [&](const rocksdb::Slice& property) {
    std::uint64_t v = 0;
    return db_->GetIntProperty(property, &v) ? v : 0;
  };
  out.sst_bytes = summed(rocksdb::DB::Properties::kTotalSstFilesSize);
  out.live_data_bytes = summed(rocksdb::DB::Properties::kEstimateLiveDataSize);
  out.memtable_bytes = summed(rocksdb::DB::Properties::kCurSizeAllMemTables);
  out.pending_compaction_bytes = summed(rocksdb::DB::Properties::kEstimatePendingCompactionBytes);
  out.flush_pending = summed(rocksdb::DB::Properties::kMemTableFlushPending);
  out.write_stopped = db_wide(rocksdb::DB::Properties::kIsWriteStopped) != 0;
  out.delayed_write_rate = db_wide(rocksdb::DB::Properties::kActualDelayedWriteRate);
  out.running_flushes = db_wide(rocksdb::DB::Properties::kNumRunningFlushes);
  out.running_compactions = db_wide(rocksdb::DB::Properties::kNumRunningCompactions);
  return out;
}

}  // namespace tidings::persistence
