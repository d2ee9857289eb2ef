#include <catch2/catch.hpp>

#include "core/stream_read.hpp"

using namespace tidings::core;
using nlohmann::json;

namespace {

json state(json value) {
  return {{"shape", "state"}, {"state", std::move(value)}};
}

std::vector<std::string> types(const stream_read& r) {
  std::vector<std::string> out;
  for (auto& ev : r.events) out.push_back(ev.fields.value("type", ""));
  return out;
}

}  // namespace

TEST_CASE("reads are classified by their data", "[stream_read]") {
  CHECK(classify_read(state({{"a", 1}})) == read_kind::state);
  CHECK(classify_read(json{{"shape", "state"}, {"text", "hello"}}) == read_kind::state);
  CHECK(classify_read(json{{"events", json::array()}}) == read_kind::event_log);
  CHECK(classify_read(json{{"mimeType", std::string(event_log_mime_type)}, {"events", json::array()}}) ==
        read_kind::event_log);
  CHECK(classify_read(json{{"shape", "event-log"}, {"events", json::array()}, {"x", 1}}) ==
        read_kind::event_log);
  CHECK(classify_read(json{{"events", json::array()}, {"other", 1}}) == read_kind::plain);
  CHECK(classify_read(json{{"title", "x"}}) == read_kind::plain);
  CHECK(classify_read(json("text")) == read_kind::plain);
  CHECK(read_kind_name(read_kind::event_log) == "event-log");
  CHECK(parse_read_kind("state") == read_kind::state);
  CHECK_FALSE(parse_read_kind("nope"));
}

TEST_CASE("state reads diff per path against the previous read", "[stream_read]") {
  path_reads reads;
  CHECK(record_baseline(reads, "/notes", state({{"owner", "ann"}})) == read_kind::state);

  auto r = apply_stream_event(reads, "/notes", "CHANGED", state({{"owner", "bob"}, {"todo", "x"}}));
  CHECK(r.kind == read_kind::state);
  CHECK(types(r) == std::vector<std::string>{"MODIFIED", "ADDED"});
  CHECK(r.events[0].object_key == "/notes\x1fowner");

  // Another path has its own state: its first read is all ADDED.
  auto other = apply_stream_event(reads, "/other", "CHANGED", state({{"k", 1}}));
  CHECK(types(other) == std::vector<std::string>{"ADDED"});

  auto same = apply_stream_event(reads, "/notes", "CHANGED", state({{"owner", "bob"}, {"todo", "x"}}));
  CHECK(same.events.empty());
}

TEST_CASE("event-log reads deliver after the last seq seen", "[stream_read]") {
  path_reads reads;
  json baseline = {{"events", {{{"seq", 1}, {"type", "ADDED"}}, {{"seq", 2}, {"type", "ADDED"}}}}};
  CHECK(record_baseline(reads, "/log", baseline) == read_kind::event_log);
  CHECK(reads["/log"].last_seq == std::optional<std::uint64_t>(2));

  json next = {{"events", {{{"seq", 2}, {"type", "ADDED"}}, {{"seq", 3}, {"type", "DELETED"}}}}};
  auto r = apply_stream_event(reads, "/log", "CHANGED", next);
  CHECK(r.kind == read_kind::event_log);
  CHECK(types(r) == std::vector<std::string>{"DELETED"});

  auto bad = apply_stream_event(reads, "/log", "CHANGED", json{{"events", {{{"type", "ADDED"}}}}});
  CHECK_FALSE(bad.error.empty());
  CHECK(bad.events.empty());
  CHECK(reads["/log"].last_seq == std::optional<std::uint64_t>(3));
}

TEST_CASE("plain events pass through with their path as key", "[stream_read]") {
  path_reads reads;
  auto r = apply_stream_event(reads, "/docs/a.md", "MODIFIED", json{{"title", "A"}});
  CHECK(r.kind == read_kind::plain);
  REQUIRE(r.events.size() == 1);
  CHECK(r.events[0].fields["type"] == "MODIFIED");
  CHECK(r.events[0].fields["key"] == "/docs/a.md");
  CHECK(r.events[0].fields["object"]["title"] == "A");
  CHECK(r.events[0].object_key.empty());
  CHECK(reads.empty());
}

TEST_CASE("a path that changes shape starts over", "[stream_read]") {
  path_reads reads;
  record_baseline(reads, "/x", state({{"a", 1}}));
  auto r = apply_stream_event(reads, "/x", "CHANGED", json{{"events", {{{"seq", 5}, {"type", "ADDED"}}}}});
  CHECK(r.kind == read_kind::event_log);
  CHECK(types(r) == std::vector<std::string>{"ADDED"});
  CHECK(reads["/x"].kind == read_kind::event_log);
}
