#include <catch2/catch.hpp>

#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"
#include "store_access.hpp"
#include "temp_dir.hpp"

using namespace tidings;
using namespace tidings::persistence;
using tidings::persistence::testing::commit;
using tidings::persistence::testing::open_store;
using tidings::persistence::testing::temp_dir;

namespace {

watch_spec make_spec(std::string name, std::optional<std::string> filter) {
  watch_spec spec;
  spec.id = {"default", std::move(name)};
  spec.uri = "stream://memo/notes";
  spec.on_event = std::move(filter);
  spec.debounce_ms = 250;
  spec.max_wait_ms = 1000;
  spec.created_ms = 1764556800000;
  return spec;
}

watch_progress make_progress(std::uint64_t seq) {
  watch_progress p;
  p.stream = "memo";
  p.cursor = {0xabcdef, seq};
  p.paths.push_back({"/notes", "state", R"({"owner":"ann"})", std::nullopt});
  p.paths.push_back({"/log", "event-log", "", 41});
  p.shape = "event-log";
  return p;
}

}  // namespace

TEST_CASE("watch specs and progress survive a reopen", "[store][watches]") {
  temp_dir tmp;
  {
    auto db = open_store(tmp.db());
    group_committer gc(*db);
    write_set ws;
    ws.watch_puts = {make_spec("cm", "return event.type"), make_spec("plain", std::nullopt)};
    ws.progress_puts.emplace_back(watch_id{"default", "cm"}, make_progress(7));
    REQUIRE(commit(gc, std::move(ws)).ok());
  }
  auto db = open_store(tmp.db());
  std::vector<watch_spec> specs;
  REQUIRE(db->load_watches(&specs).ok());
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].id.name == "cm");
  CHECK(specs[0].on_event == std::optional<std::string>("return event.type"));
  CHECK(specs[0].uri == "stream://memo/notes");
  CHECK(specs[0].debounce_ms == 250);
  CHECK(specs[0].max_wait_ms == 1000);
  CHECK(specs[1].id.name == "plain");
  CHECK_FALSE(specs[1].on_event);

  std::optional<watch_progress> progress;
  REQUIRE(db->get_watch_progress({"default", "cm"}, "memo", &progress).ok());
  REQUIRE(progress);
  CHECK(progress->cursor == core::cursor{0xabcdef, 7});
  REQUIRE(progress->paths.size() == 2);
  // Read back in path order.
  CHECK(progress->paths[0].path == "/log");
  CHECK(progress->paths[0].last_seq == std::optional<std::uint64_t>(41));
  CHECK(progress->paths[1].path == "/notes");
  CHECK(progress->paths[1].state_json == R"({"owner":"ann"})");
  CHECK_FALSE(progress->paths[1].last_seq);
  CHECK(progress->shape == "event-log");

  REQUIRE(db->get_watch_progress({"default", "plain"}, "memo", &progress).ok());
  CHECK_FALSE(progress);
  REQUIRE(db->get_watch_progress({"default", "cm"}, "other", &progress).ok());
  CHECK_FALSE(progress);
}

TEST_CASE("deleting a watch removes its spec, cursors and snapshot only", "[store][watches]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  write_set ws;
  ws.watch_puts = {make_spec("a", std::nullopt), make_spec("ab", std::nullopt)};
  ws.progress_puts.emplace_back(watch_id{"default", "a"}, make_progress(3));
  ws.progress_puts.emplace_back(watch_id{"default", "ab"}, make_progress(4));
  REQUIRE(commit(gc, std::move(ws)).ok());

  write_set del;
  del.watch_deletes.push_back({"default", "a"});
  REQUIRE(commit(gc, std::move(del)).ok());

  std::vector<watch_spec> specs;
  REQUIRE(db->load_watches(&specs).ok());
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].id.name == "ab");
  std::optional<watch_progress> progress;
  REQUIRE(db->get_watch_progress({"default", "a"}, "memo", &progress).ok());
  CHECK_FALSE(progress);
  REQUIRE(db->get_watch_progress({"default", "ab"}, "memo", &progress).ok());
  REQUIRE(progress);
  CHECK(progress->cursor.seq == 4);
}

TEST_CASE("a replaced watch is deleted and put in one write set", "[store][watches]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  write_set first;
  first.watch_puts = {make_spec("cm", "return 1")};
  first.progress_puts.emplace_back(watch_id{"default", "cm"}, make_progress(3));
  REQUIRE(commit(gc, std::move(first)).ok());

  write_set replace;
  replace.watch_deletes.push_back({"default", "cm"});
  replace.watch_puts = {make_spec("cm", "return 2")};
  replace.progress_puts.emplace_back(watch_id{"default", "cm"}, make_progress(9));
  REQUIRE(commit(gc, std::move(replace)).ok());

  std::vector<watch_spec> specs;
  REQUIRE(db->load_watches(&specs).ok());
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].on_event == std::optional<std::string>("return 2"));
  std::optional<watch_progress> progress;
  REQUIRE(db->get_watch_progress({"default", "cm"}, "memo", &progress).ok());
  REQUIRE(progress);
  CHECK(progress->cursor.seq == 9);
}

TEST_CASE("read_events_backward returns the newest first", "[store]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  for (std::uint64_t id : {1, 2}) {
    write_set ws;
    ws.stream_id = id;
    for (std::uint64_t seq = 1; seq <= 5; ++seq) {
      stored_event e;
      e.seq = seq;
      e.ev.path = "/s" + std::to_string(id);
      e.ev.data_json = std::to_string(seq);
      ws.events.push_back(e);
    }
    REQUIRE(commit(gc, std::move(ws)).ok());
  }
  std::vector<stored_event> out;
  REQUIRE(db->read_events_backward(1, 4, 10, &out).ok());
  REQUIRE(out.size() == 4);
  CHECK(out.front().seq == 4);
  CHECK(out.back().seq == 1);
  CHECK(out.front().ev.path == "/s1");

  REQUIRE(db->read_events_backward(2, 100, 2, &out).ok());
  REQUIRE(out.size() == 2);
  CHECK(out[0].seq == 5);
  CHECK(out[1].seq == 4);
  CHECK(out[0].ev.path == "/s2");

  REQUIRE(db->read_events_backward(3, 100, 10, &out).ok());
  CHECK(out.empty());
  REQUIRE(db->read_events_backward(1, 0, 10, &out).ok());
  CHECK(out.empty());
}

TEST_CASE("a position writes only the paths that changed, a reset replaces them all", "[store][watches]") {
  temp_dir tmp;
  auto db = open_store(tmp.db());
  group_committer gc(*db);
  const watch_id id{"default", "cm"};
  write_set first;
  first.progress_puts.emplace_back(id, make_progress(3));  // /log and /notes, replacing
  REQUIRE(commit(gc, std::move(first)).ok());

  watch_progress delta;
  delta.stream = "memo";
  delta.cursor = {0xabcdef, 4};
  delta.replace_paths = false;
  delta.paths.push_back({"/notes", "state", R"({"owner":"bob"})", std::nullopt});
  write_set second;
  second.progress_puts.emplace_back(id, delta);
  REQUIRE(commit(gc, std::move(second)).ok());

  std::optional<watch_progress> got;
  REQUIRE(db->get_watch_progress(id, "memo", &got).ok());
  REQUIRE(got);
  CHECK(got->cursor.seq == 4);
  REQUIRE(got->paths.size() == 2);
  CHECK(got->paths[0].last_seq == std::optional<std::uint64_t>(41));  // /log untouched
  CHECK(got->paths[1].state_json == R"({"owner":"bob"})");

  watch_progress reset;
  reset.stream = "memo";
  reset.cursor = {0x123, 1};
  reset.paths.push_back({"/other", "state", "[]", std::nullopt});
  write_set third;
  third.progress_puts.emplace_back(id, reset);
  REQUIRE(commit(gc, std::move(third)).ok());
  REQUIRE(db->get_watch_progress(id, "memo", &got).ok());
  REQUIRE(got);
  REQUIRE(got->paths.size() == 1);
  CHECK(got->paths[0].path == "/other");
}

TEST_CASE("a source's snapshot survives a reopen and is replaced by the next", "[store][sources]") {
  temp_dir tmp;
  const std::string key = "memory|memory://knowledge-graph";
  {
    auto db = open_store(tmp.db());
    group_committer gc(*db);
    write_set first;
    first.snapshot_puts.push_back({"default", key, {"", "state", R"({"a":1})", std::nullopt}});
    first.snapshot_puts.push_back({"other", key, {"", "event-log", "", 9}});
    REQUIRE(commit(gc, std::move(first)).ok());
    write_set second;
    second.snapshot_puts.push_back({"default", key, {"", "state", R"({"a":2})", std::nullopt}});
    REQUIRE(commit(gc, std::move(second)).ok());
  }
  auto db = open_store(tmp.db());
  std::optional<path_state> got;
  REQUIRE(db->get_source_snapshot("default", key, &got).ok());
  REQUIRE(got);
  CHECK(got->shape == "state");
  CHECK(got->state_json == R"({"a":2})");
  REQUIRE(db->get_source_snapshot("other", key, &got).ok());
  REQUIRE(got);
  CHECK(got->last_seq == std::optional<std::uint64_t>(9));
  REQUIRE(db->get_source_snapshot("default", "nothing|x://y", &got).ok());
  CHECK_FALSE(got);
  // A watch's snapshot records live beside them without mixing.
  std::optional<watch_progress> progress;
  REQUIRE(db->get_watch_progress({"default", "memory"}, "memo", &progress).ok());
  CHECK_FALSE(progress);
}
