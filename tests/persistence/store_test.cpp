#include "persistence/store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>

#include <catch2/catch.hpp>

#include "persistence/group_commit.hpp"
#include "store_access.hpp"
#include "temp_dir.hpp"

using namespace tidings;
using namespace tidings::persistence;
using tidings::persistence::testing::commit;
using tidings::persistence::testing::open_store;
using tidings::persistence::testing::temp_dir;

namespace {

stored_event make_event(std::uint64_t seq) {
  stored_event e;
  e.seq = seq;
  e.ev.path = "/item/" + std::to_string(seq);
  e.ev.type = "MODIFIED";
  e.ev.data_json = "{\"n\":" + std::to_string(seq) + "}";
  e.ev.time_ms = 1764556800000 + static_cast<std::int64_t>(seq);
  return e;
}

stream_meta make_meta(std::uint64_t id, std::string name, std::uint64_t head) {
  stream_meta m;
  m.tenant = "default";
  m.name = std::move(name);
  m.id = id;
  m.epoch = 0x9f3a0000 + id;
  m.first_seq = 1;
  m.head_seq = head;
  m.retention_count = 10000;
  m.retention_age_ms = 3600000;
  m.created_ms = 1764556800000;
  return m;
}

write_set append(std::uint64_t id, std::string name, std::uint64_t from, std::uint64_t to) {
  write_set ws;
  ws.meta = make_meta(id, std::move(name), to);
  ws.stream_id = id;
  for (auto seq = from; seq <= to; ++seq) ws.events.push_back(make_event(seq));
  return ws;
}

void check_event(const stored_event& got, std::uint64_t seq) {
  auto want = make_event(seq);
  CHECK(got.seq == seq);
  CHECK(got.ev.path == want.ev.path);
  CHECK(got.ev.type == want.ev.type);
  CHECK(got.ev.data_json == want.ev.data_json);
  CHECK(got.ev.time_ms == want.ev.time_ms);
}

bool same_meta(const stream_meta& a, const stream_meta& b) {
  return a.tenant == b.tenant && a.name == b.name && a.id == b.id && a.epoch == b.epoch &&
         a.first_seq == b.first_seq && a.head_seq == b.head_seq && a.retention_count == b.retention_count &&
         a.retention_age_ms == b.retention_age_ms && a.created_ms == b.created_ms;
}

std::vector<stored_event> read(store& db, std::uint64_t id, std::uint64_t after, std::uint64_t up_to,
                               std::size_t max) {
  std::vector<stored_event> out;
  auto s = db.read_events(id, after, up_to, max, &out);
  INFO(s.message());
  REQUIRE(s.ok());
  return out;
}

}  // namespace

TEST_CASE("parse_durability", "[store]") {
  CHECK(parse_durability("sync") == durability::sync);
  CHECK(parse_durability("batch") == durability::batch);
  CHECK(parse_durability("none") == durability::none);
  CHECK_FALSE(parse_durability("SYNC"));
  CHECK_FALSE(parse_durability(""));
}

TEST_CASE("a new store creates its directory and is empty", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  CHECK(db->mode() == durability::sync);
  std::vector<stream_meta> streams;
  REQUIRE(db->load_streams(&streams).ok());
  CHECK(streams.empty());
  std::optional<stream_meta> missing;
  REQUIRE(db->get_stream("default", "docs", &missing).ok());
  CHECK_FALSE(missing);
  CHECK(read(*db, 1, 0, 100, 100).empty());
  std::optional<idempotency_record> rec;
  REQUIRE(db->get_idempotency(1, "k", &rec).ok());
  CHECK_FALSE(rec);
}

TEST_CASE("open fails with a status, not an exception", "[store]") {
  temp_dir tmp;
  std::string file = tmp.str() + "/plain-file";
  std::ofstream(file) << "not a directory";
  std::unique_ptr<store> db;
  auto s = store::open(file + "/db", durability::sync, &db);
  CHECK_FALSE(s.ok());
  CHECK_FALSE(s.message().empty());
  CHECK_FALSE(db);
}

TEST_CASE("write, read back, reopen, read back every family", "[store]") {
  temp_dir tmp;
  auto docs = make_meta(1, "docs", 30);
  auto other = make_meta(2, "watch:build", 3);
  other.tenant = "acme";
  {
    auto db = open_store(tmp.db());
    group_committer gc(*db);
    auto ws = append(1, "docs", 1, 30);
    ws.idempotency.push_back({"key-1", idempotency_record{docs.epoch, 1, 30, 1764556800123}});
    REQUIRE(commit(gc, std::move(ws)).ok());
    auto ws2 = append(2, "watch:build", 1, 3);
    ws2.meta = other;
    REQUIRE(commit(gc, std::move(ws2)).ok());
    gc.stop();

    auto events = read(*db, 1, 0, 30, 1000);
    REQUIRE(events.size() == 30);
    for (std::size_t i = 0; i < events.size(); ++i) check_event(events[i], i + 1);
  }

  auto db = open_store(tmp.db());
  std::vector<stream_meta> streams;
  REQUIRE(db->load_streams(&streams).ok());
  REQUIRE(streams.size() == 2);
  // Keys order by tenant first.
  CHECK(same_meta(streams[0], other));
  CHECK(same_meta(streams[1], docs));

  std::optional<stream_meta> got;
  REQUIRE(db->get_stream("default", "docs", &got).ok());
  REQUIRE(got);
  CHECK(same_meta(*got, docs));
  REQUIRE(db->get_stream("acme", "docs", &got).ok());
  CHECK_FALSE(got);

  auto events = read(*db, 1, 0, 30, 1000);
  REQUIRE(events.size() == 30);
  for (std::size_t i = 0; i < events.size(); ++i) check_event(events[i], i + 1);
  auto watch = read(*db, 2, 0, 100, 1000);
  REQUIRE(watch.size() == 3);
  check_event(watch[2], 3);

  std::optional<idempotency_record> rec;
  REQUIRE(db->get_idempotency(1, "key-1", &rec).ok());
  REQUIRE(rec);
  CHECK(rec->epoch == docs.epoch);
  CHECK(rec->first_seq == 1);
  CHECK(rec->count == 30);
  CHECK(rec->time_ms == 1764556800123);
  REQUIRE(db->get_idempotency(2, "key-1", &rec).ok());
  CHECK_FALSE(rec);  // keys are per stream
  REQUIRE(db->get_idempotency(1, "key-2", &rec).ok());
  CHECK_FALSE(rec);
}

TEST_CASE("the database has every family and a schema version", "[store]") {
  temp_dir tmp;
  { open_store(tmp.db()); }
  std::vector<std::string> families;
  REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), tmp.db(), &families).ok());
  for (const char* name :
       {"default", "streams", "events", "idempotency", "meta", "watches", "cursors", "snapshots"})
    CHECK(std::find(families.begin(), families.end(), name) != families.end());

  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (auto& name : families) descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), tmp.db(), descriptors, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  auto meta = std::find(families.begin(), families.end(), "meta") - families.begin();
  std::string version;
  CHECK(db->Get(rocksdb::ReadOptions(), handles[static_cast<std::size_t>(meta)], "schema_version", &version)
            .ok());
  CHECK(version == "1");
  for (auto* h : handles) CHECK(db->DestroyColumnFamilyHandle(h).ok());
}

TEST_CASE("a family unknown to this version does not stop a reopen", "[store]") {
  temp_dir tmp;
  { open_store(tmp.db()); }
  {
    std::vector<std::string> families;
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), tmp.db(), &families).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
    for (auto& name : families) descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), tmp.db(), descriptors, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::ColumnFamilyHandle* extra = nullptr;
    REQUIRE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "from_a_later_version", &extra).ok());
    handles.push_back(extra);
    for (auto* h : handles) CHECK(db->DestroyColumnFamilyHandle(h).ok());
  }
  auto db = open_store(tmp.db());
  std::vector<stream_meta> streams;
  CHECK(db->load_streams(&streams).ok());
}

TEST_CASE("a newer schema version is refused", "[store]") {
  temp_dir tmp;
  { open_store(tmp.db()); }
  {
    std::vector<std::string> families;
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), tmp.db(), &families).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
    for (auto& name : families) descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), tmp.db(), descriptors, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    auto meta = std::find(families.begin(), families.end(), "meta") - families.begin();
    CHECK(db->Put(rocksdb::WriteOptions(), handles[static_cast<std::size_t>(meta)], "schema_version", "2")
              .ok());
    for (auto* h : handles) CHECK(db->DestroyColumnFamilyHandle(h).ok());
  }
  std::unique_ptr<store> db;
  auto s = store::open(tmp.db(), durability::sync, &db);
  CHECK_FALSE(s.ok());
  CHECK_FALSE(db);
}

TEST_CASE("read_events honours after, up_to and max", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  // Neighbouring streams must not leak into each other's range.
  for (std::uint64_t id : {4, 5, 6}) {
    rocksdb::WriteBatch batch;
    db->add_to_batch(append(id, "s" + std::to_string(id), 1, 20), batch);
    REQUIRE(db->write(batch).ok());
  }

  auto all = read(*db, 5, 0, 20, 100);
  REQUIRE(all.size() == 20);
  check_event(all.front(), 1);
  check_event(all.back(), 20);

  auto page = read(*db, 5, 5, 20, 4);
  REQUIRE(page.size() == 4);
  check_event(page[0], 6);
  check_event(page[3], 9);

  auto bounded = read(*db, 5, 10, 12, 100);
  REQUIRE(bounded.size() == 2);
  check_event(bounded[0], 11);
  check_event(bounded[1], 12);

  CHECK(read(*db, 5, 20, 100, 100).empty());        // nothing after the head
  CHECK(read(*db, 5, 12, 12, 100).empty());         // empty window
  CHECK(read(*db, 5, 15, 10, 100).empty());         // inverted window
  CHECK(read(*db, 5, 0, 20, 0).empty());            // max 0
  CHECK(read(*db, 7, 0, 100, 100).empty());         // unknown stream
  CHECK(read(*db, 5, 0, ~0ull, 100).size() == 20);  // no upper bound on seq
  CHECK(read(*db, 5, ~0ull, ~0ull, 100).empty());

  // The output is replaced, not appended to.
  std::vector<stored_event> out(3);
  REQUIRE(db->read_events(5, 0, 1, 10, &out).ok());
  CHECK(out.size() == 1);
}

TEST_CASE("read_events at the largest stream id", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  rocksdb::WriteBatch batch;
  db->add_to_batch(append(~0ull, "last", 1, 3), batch);
  db->add_to_batch(append(~0ull - 1, "before", 1, 3), batch);
  REQUIRE(db->write(batch).ok());
  CHECK(read(*db, ~0ull, 0, ~0ull, 100).size() == 3);
  CHECK(read(*db, ~0ull - 1, 0, ~0ull, 100).size() == 3);
}

TEST_CASE("trim deletes the range and keeps the rest", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  REQUIRE(commit(gc, append(3, "docs", 1, 50)).ok());
  REQUIRE(commit(gc, append(4, "next", 1, 5)).ok());

  write_set trim = append(3, "docs", 51, 60);
  trim.meta->first_seq = 41;
  trim.trim_before = 41;
  REQUIRE(commit(gc, std::move(trim)).ok());

  auto kept = read(*db, 3, 0, 1000, 1000);
  REQUIRE(kept.size() == 20);
  for (std::size_t i = 0; i < kept.size(); ++i) check_event(kept[i], 41 + i);
  CHECK(read(*db, 4, 0, 1000, 1000).size() == 5);  // the next stream is untouched

  std::optional<stream_meta> meta;
  REQUIRE(db->get_stream("default", "docs", &meta).ok());
  REQUIRE(meta);
  CHECK(meta->first_seq == 41);
  CHECK(meta->head_seq == 60);

  // Trimming everything leaves an empty stream.
  write_set all;
  all.stream_id = 3;
  all.trim_before = 61;
  REQUIRE(commit(gc, std::move(all)).ok());
  CHECK(read(*db, 3, 0, 1000, 1000).empty());
}

TEST_CASE("idempotency records round trip", "[store]") {
  temp_dir tmp;
  {
    auto db = open_store(tmp.db());
    rocksdb::WriteBatch batch;
    write_set ws;
    ws.stream_id = 9;
    ws.idempotency.push_back({"a", {1, 2, 3, 4}});
    ws.idempotency.push_back({std::string("b\0c", 3), {5, 6, 7, -8}});
    db->add_to_batch(ws, batch);
    REQUIRE(db->write(batch).ok());
  }
  auto db = open_store(tmp.db());
  std::optional<idempotency_record> rec;
  REQUIRE(db->get_idempotency(9, "a", &rec).ok());
  REQUIRE(rec);
  CHECK(rec->epoch == 1);
  CHECK(rec->first_seq == 2);
  CHECK(rec->count == 3);
  CHECK(rec->time_ms == 4);
  REQUIRE(db->get_idempotency(9, std::string("b\0c", 3), &rec).ok());
  REQUIRE(rec);
  CHECK(rec->time_ms == -8);
  REQUIRE(db->get_idempotency(9, "b", &rec).ok());
  CHECK_FALSE(rec);
}

TEST_CASE("allocate_stream_id never hands out an id twice across reopens", "[store]") {
  temp_dir tmp;
  std::vector<std::uint64_t> ids;
  auto take = [&ids](store& db, int n) {
    for (int i = 0; i < n; ++i) {
      std::uint64_t id = 0;
      REQUIRE(db.allocate_stream_id(&id).ok());
      ids.push_back(id);
    }
  };
  {
    auto db = open_store(tmp.db(), durability::none);
    take(*db, 3);
  }
  {
    // The rest of the first block is skipped, never reused.
    auto db = open_store(tmp.db());
    take(*db, 1);
  }
  {
    // Past a block's end within one run: the next block is reserved.
    auto db = open_store(tmp.db());
    take(*db, static_cast<int>(store::stream_id_block) + 1);
  }
  CHECK(std::vector<std::uint64_t>(ids.begin(), ids.begin() + 3) == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(ids[3] == 1 + store::stream_id_block);
  CHECK(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
  CHECK(ids.back() == 1 + 3 * store::stream_id_block);
}

TEST_CASE("allocate_stream_id is unique under concurrency", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  std::vector<std::future<std::vector<std::uint64_t>>> workers;
  for (int t = 0; t < 4; ++t)
    workers.push_back(std::async(std::launch::async, [&db] {
      std::vector<std::uint64_t> got;
      for (int i = 0; i < 25; ++i) {
        std::uint64_t id = 0;
        if (db->allocate_stream_id(&id).ok()) got.push_back(id);
      }
      return got;
    }));
  std::vector<std::uint64_t> all;
  for (auto& w : workers) {
    REQUIRE(w.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    auto got = w.get();
    all.insert(all.end(), got.begin(), got.end());
  }
  std::sort(all.begin(), all.end());
  REQUIRE(all.size() == 100);
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all.front() == 1);
  CHECK(all.back() == 100);
}

TEST_CASE("the node id is kept across a reopen", "[store]") {
  temp_dir tmp;
  {
    auto db = open_store(tmp.db());
    std::optional<std::string> id;
    REQUIRE(db->get_node_id(&id).ok());
    CHECK_FALSE(id);
    REQUIRE(db->put_node_id("0123456789abcdef").ok());
  }
  auto db = open_store(tmp.db());
  std::optional<std::string> id;
  REQUIRE(db->get_node_id(&id).ok());
  CHECK(id == "0123456789abcdef");
}

TEST_CASE("approximate_event_bytes counts one stream's events, memtable included", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  REQUIRE(commit(gc, append(3, "docs", 1, 200)).ok());
  REQUIRE(commit(gc, append(5, "next", 1, 2)).ok());
  std::uint64_t docs = 0, next = 0, empty = 0;
  REQUIRE(db->approximate_event_bytes(3, &docs).ok());
  REQUIRE(db->approximate_event_bytes(5, &next).ok());
  REQUIRE(db->approximate_event_bytes(4, &empty).ok());
  CHECK(docs > 200 * 16);  // at least the keys
  CHECK(docs > next);
  CHECK(empty == 0);
}

TEST_CASE("truncate_after drops a tail and the same set writes its replacement", "[store][replication]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  REQUIRE(commit(gc, append(3, "docs", 1, 10)).ok());
  REQUIRE(commit(gc, append(4, "next", 1, 10)).ok());

  // A new term's owner had only up to 6: 7..10 go, its 7 and 8 come in.
  write_set ws = append(3, "docs", 7, 8);
  ws.truncate_after = 6;
  ws.meta->term = 4;
  ws.meta->term_owner = "node-b";
  for (auto& e : ws.events) e.ev.data_json = "{\"term\":4}";
  REQUIRE(commit(gc, std::move(ws)).ok());

  auto kept = read(*db, 3, 0, 1000, 1000);
  REQUIRE(kept.size() == 8);
  for (std::size_t i = 0; i < 6; ++i) check_event(kept[i], 1 + i);
  CHECK(kept[6].ev.data_json == "{\"term\":4}");
  CHECK(kept[7].seq == 8);
  CHECK(read(*db, 4, 0, 1000, 1000).size() == 10);  // the next stream is untouched

  // The term and its owner survive a reopen.
  gc.stop();
  db.reset();
  db = open_store(tmp.db());
  std::optional<stream_meta> meta;
  REQUIRE(db->get_stream("default", "docs", &meta).ok());
  REQUIRE(meta);
  CHECK(meta->term == 4);
  CHECK(meta->term_owner == "node-b");
  CHECK(meta->head_seq == 8);
}

TEST_CASE("listing idempotency records gives the newest max of those the filter keeps, oldest first",
          "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  // Key "k<n>" names seq 100 - n; even n under epoch 7, odd n under epoch 8.
  auto ws = append(1, "docs", 1, 100);
  for (std::uint64_t n = 0; n < 40; ++n)
    ws.idempotency.push_back(
        {"k" + std::to_string(n), idempotency_record{n % 2 == 0 ? 7u : 8u, 100 - n, 1, 0}});
  REQUIRE(commit(gc, std::move(ws)).ok());
  gc.stop();

  std::vector<std::pair<std::string, idempotency_record>> got;
  REQUIRE(db->list_idempotency(1, 100, nullptr, &got).ok());
  CHECK(got.size() == 40);
  // Filtered in the scan: the records it drops do not count towards max.
  // Newest by seq, whatever their keys' order (k0, k1, k10, k11, ...): k0
  // names seq 100, k2 seq 98, k4 seq 96.
  const auto epoch_7 = [](const idempotency_record& r) { return r.epoch == 7; };
  REQUIRE(db->list_idempotency(1, 3, epoch_7, &got).ok());
  REQUIRE(got.size() == 3);
  CHECK(got[0].first == "k4");
  CHECK(got[1].first == "k2");
  CHECK(got[2].first == "k0");
  for (const auto& [key, rec] : got) CHECK(rec.epoch == 7);
  // A later epoch is newer than any seq of an earlier one.
  REQUIRE(db->list_idempotency(1, 2, nullptr, &got).ok());
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == "k3");  // epoch 8, seq 97
  CHECK(got[1].first == "k1");  // epoch 8, seq 99
  REQUIRE(db->list_idempotency(1, 0, nullptr, &got).ok());
  CHECK(got.empty());
  REQUIRE(db->list_idempotency(2, 3, nullptr, &got).ok());
  CHECK(got.empty());  // another stream's
}

TEST_CASE("idempotency records older than the TTL go at the family's compaction, newer ones stay",
          "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::int64_t hour_ms = 3'600'000;
  auto ws = append(1, "docs", 1, 3);
  ws.idempotency.push_back({"old", idempotency_record{7, 1, 1, now_ms - 25 * hour_ms}});
  ws.idempotency.push_back({"recent", idempotency_record{7, 2, 1, now_ms - 23 * hour_ms}});
  ws.idempotency.push_back({"new", idempotency_record{7, 3, 1, now_ms}});
  REQUIRE(commit(gc, std::move(ws)).ok());
  gc.stop();

  std::optional<idempotency_record> rec;
  REQUIRE(db->get_idempotency(1, "old", &rec).ok());
  CHECK(rec);  // until a compaction
  REQUIRE(db->compact_idempotency().ok());
  REQUIRE(db->get_idempotency(1, "old", &rec).ok());
  CHECK_FALSE(rec);
  REQUIRE(db->get_idempotency(1, "recent", &rec).ok());
  CHECK(rec);
  // A shorter TTL takes effect at the next compaction.
  db->set_idempotency_ttl(std::chrono::hours(1));
  REQUIRE(db->compact_idempotency().ok());
  REQUIRE(db->get_idempotency(1, "recent", &rec).ok());
  CHECK_FALSE(rec);
  REQUIRE(db->get_idempotency(1, "new", &rec).ok());
  REQUIRE(rec);
  CHECK(rec->first_seq == 3);
}
