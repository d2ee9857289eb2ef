#include "core/read_extraction.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace tidings::core;
using json = nlohmann::json;

namespace {

json j(const char* text) {
  return json::parse(text);
}

std::vector<std::string> types(const std::vector<extracted_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.fields.value("type", "?"));
  return out;
}

std::vector<std::string> keys(const std::vector<extracted_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.fields.value("key", "?"));
  return out;
}

// Built by pointer, not recursion; nlohmann destroys it iteratively.
json nested_arrays(std::size_t depth, int leaf) {
  json root = json::array();
  json* cur = &root;
  for (std::size_t i = 1; i < depth; ++i) {
    cur->push_back(json::array());
    cur = &cur->back();
  }
  cur->push_back(leaf);
  return root;
}

const std::vector<std::string> none;

}  // namespace

TEST_CASE("state text parses as JSON, anything else stays text", "[read_extraction]") {
  CHECK(parse_state_text(R"({"a":[1,2]})") == j(R"({"a":[1,2]})"));
  CHECK(parse_state_text("42") == json(42));
  CHECK(parse_state_text("hello world") == json("hello world"));
  CHECK(parse_state_text("") == json(""));
  CHECK(parse_state_text("[1,2") == json("[1,2"));
  CHECK(parse_state_text("\"caf\xff\"") == json("\"caf\xff\""));
  CHECK(parse_state_text(std::string(200, '[') + std::string(200, ']')).is_array());
}

TEST_CASE("state text nested too deeply stays text", "[read_extraction]") {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(parse_state_text(deep) == json(deep));
  // Brackets inside strings do not count.
  std::string quoted = "[\"" + std::string(1000, '[') + "\\\"\"]";
  CHECK(parse_state_text(quoted).is_array());
}

TEST_CASE("a first read of an array adds every item in order", "[read_extraction]") {
  auto events = diff_states(nullptr, j(R"([{"id":1},{"id":2}])"));
  CHECK(types(events) == std::vector<std::string>{"ADDED", "ADDED"});
  CHECK(keys(events) == std::vector<std::string>{"1", "2"});
  CHECK(events[0].object_key == "1");
  CHECK(events[0].fields["item"] == j(R"({"id":1})"));
  CHECK(events[0].fields["object"] == j(R"({"id":1})"));
  CHECK(events[0].fields["new"] == j(R"({"id":1})"));
  CHECK_FALSE(events[0].fields.contains("old"));
}

TEST_CASE("arrays diff by key: added and modified in order, then deleted", "[read_extraction]") {
  auto events = diff_states(j(R"([{"id":1,"v":1},{"id":2,"v":1}])"), j(R"([{"id":2,"v":2},{"id":3}])"));
  REQUIRE(types(events) == std::vector<std::string>{"MODIFIED", "ADDED", "DELETED"});
  CHECK(keys(events) == std::vector<std::string>{"2", "3", "1"});
  CHECK(events[0].fields["old"] == j(R"({"id":2,"v":1})"));
  CHECK(events[0].fields["new"] == j(R"({"id":2,"v":2})"));
  CHECK(events[0].fields["changed"] == j(R"(["v"])"));
  CHECK(events[2].fields["item"] == j(R"({"id":1,"v":1})"));
  CHECK(events[2].fields["object"] == j(R"({"id":1,"v":1})"));
  CHECK(events[2].fields["new"].is_null());
  CHECK(events[2].fields["old"] == j(R"({"id":1,"v":1})"));
}

TEST_CASE("array item keys take the first present identity field", "[read_extraction]") {
  auto key_of = [](const char* item) {
    auto events = diff_states(nullptr, json::array({j(item)}));
    REQUIRE(events.size() == 1);
    return events[0].object_key;
  };
  CHECK(key_of(R"({"metadata":{"uid":"u1","name":"n"},"uid":"u2","id":3,"name":"x"})") == "u1");
  CHECK(key_of(R"({"metadata":{"name":"n"},"uid":"u2","id":3,"name":"x"})") == "u2");
  CHECK(key_of(R"({"metadata":{"name":"n"},"id":3,"name":"x"})") == "3");
  CHECK(key_of(R"({"metadata":{"name":"n"},"name":"x"})") == "n");
  CHECK(key_of(R"({"name":"x"})") == "x");
  // Unusable identities fall through to the next field, then the whole item.
  CHECK(key_of(R"({"metadata":{"uid":""},"id":{"a":1},"name":"x"})") == "x");
  CHECK(key_of(R"({"id":null,"v":1})") == R"({"id":null,"v":1})");
  CHECK(key_of(R"({"metadata":"odd","name":true})") == R"({"metadata":"odd","name":true})");
  CHECK(key_of("\"text\"") == "\"text\"");
}

TEST_CASE("key-less array items pair up as a multiset", "[read_extraction]") {
  auto events = diff_states(j(R"(["a","b","a"])"), j(R"(["b","c","a"])"));
  CHECK(types(events) == std::vector<std::string>{"ADDED", "DELETED"});
  CHECK(keys(events) == std::vector<std::string>{"\"c\"", "\"a\""});
  CHECK(diff_states(j(R"(["a","a"])"), j(R"(["a","a"])")).empty());
}

TEST_CASE("a MODIFIED differing only in ignored fields is dropped", "[read_extraction]") {
  auto before = j(R"([{"metadata":{"uid":"u","resourceVersion":"1","generation":1},"spec":1}])");
  auto after =
      j(R"([{"metadata":{"uid":"u","resourceVersion":"2","generation":2,"managedFields":[]},"spec":1}])");
  CHECK(diff_states(before, after).empty());
  CHECK(diff_states(j(R"({"cm":{"metadata":{"resourceVersion":"1"}}})"),
                    j(R"({"cm":{"metadata":{"resourceVersion":"2"}}})"))
            .empty());
}

TEST_CASE("objects diff by top-level key, sorted", "[read_extraction]") {
  auto events =
      diff_states(j(R"({"todo":"a","gone":1,"same":true})"), j(R"({"todo":"b","owner":"x","same":true})"));
  REQUIRE(types(events) == std::vector<std::string>{"DELETED", "ADDED", "MODIFIED"});
  CHECK(keys(events) == std::vector<std::string>{"gone", "owner", "todo"});
  CHECK(events[0].fields["old"] == json(1));
  CHECK(events[0].fields["new"].is_null());
  CHECK(events[1].fields["new"] == json("x"));
  CHECK_FALSE(events[1].fields.contains("old"));
  // A MODIFIED of scalars has no `changed` and is never dropped.
  CHECK(events[2].fields["old"] == json("a"));
  CHECK(events[2].fields["new"] == json("b"));
  CHECK_FALSE(events[2].fields.contains("changed"));
  CHECK(events[2].object_key == "todo");
}

TEST_CASE("object values that are objects get `changed`", "[read_extraction]") {
  auto events = diff_states(j(R"({"cfg":{"a":1,"b":{"c":1}}})"), j(R"({"cfg":{"a":1,"b":{"c":2}}})"));
  REQUIRE(events.size() == 1);
  CHECK(events[0].fields["changed"] == j(R"(["b.c"])"));
}

TEST_CASE("a first read of an object adds every key", "[read_extraction]") {
  auto events = diff_states(nullptr, j(R"({"b":1,"a":2})"));
  CHECK(types(events) == std::vector<std::string>{"ADDED", "ADDED"});
  CHECK(keys(events) == std::vector<std::string>{"a", "b"});
  CHECK(diff_states(nullptr, json::object()).empty());
  CHECK(diff_states(nullptr, json::array()).empty());
}

TEST_CASE("text and scalars change as a whole", "[read_extraction]") {
  auto first = diff_states(nullptr, json("notes v1"));
  REQUIRE(types(first) == std::vector<std::string>{"CHANGED"});
  CHECK(first[0].fields["key"] == "");
  CHECK(first[0].object_key.empty());
  CHECK(first[0].fields["old"].is_null());
  CHECK(first[0].fields["new"] == "notes v1");

  auto next = diff_states(json("notes v1"), json("notes v2"));
  REQUIRE(next.size() == 1);
  CHECK(next[0].fields["old"] == "notes v1");
  CHECK(next[0].fields["new"] == "notes v2");

  CHECK(diff_states(json("same"), json("same")).empty());
  CHECK(diff_states(json(3), json(3)).empty());
  CHECK(diff_states(nullptr, nullptr).empty());
  CHECK(types(diff_states(json(1), json(true))) == std::vector<std::string>{"CHANGED"});
}

TEST_CASE("a change of kind is one CHANGED of the whole value", "[read_extraction]") {
  auto events = diff_states(j(R"([1,2])"), j(R"({"a":1})"));
  REQUIRE(types(events) == std::vector<std::string>{"CHANGED"});
  CHECK(events[0].fields["key"] == "");
  CHECK(events[0].fields["old"] == j("[1,2]"));
  CHECK(events[0].fields["new"] == j(R"({"a":1})"));
  CHECK(types(diff_states(j(R"({"a":1})"), json("text"))) == std::vector<std::string>{"CHANGED"});
  CHECK(types(diff_states(json("text"), j("[1]"))) == std::vector<std::string>{"CHANGED"});
}

TEST_CASE("diffing values nested too deeply does not recurse", "[read_extraction]") {
  json deep = nested_arrays(300, 1);
  CHECK(diff_states(deep, nested_arrays(300, 1)).empty());
  auto events = diff_states(deep, nested_arrays(300, 2));
  REQUIRE(events.size() == 1);
  CHECK(events[0].fields["type"] == "CHANGED");
  CHECK(events[0].fields.contains("error"));
}

TEST_CASE("changed paths stop at depth three", "[read_extraction]") {
  CHECK(changed_paths(j(R"({"a":{"b":{"c":{"d":1}}}})"), j(R"({"a":{"b":{"c":{"d":2}}}})")) ==
        std::vector<std::string>{"a.b.c"});
  CHECK(changed_paths(j(R"({"status":{"phase":"A"}})"), j(R"({"status":{"phase":"B"}})")) ==
        std::vector<std::string>{"status.phase"});
}

TEST_CASE("changed paths are sorted and include one-sided keys", "[read_extraction]") {
  CHECK(changed_paths(j(R"({"z":1,"a":{"y":1},"m":1})"), j(R"({"z":2,"a":{"x":1},"n":1})")) ==
        std::vector<std::string>{"a.x", "a.y", "m", "n", "z"});
  CHECK(changed_paths(j(R"({"a":{"b":1}})"), j(R"({"a":2})")) == std::vector<std::string>{"a"});
  CHECK(changed_paths(j(R"({"a":1})"), j(R"({"a":1})")) == none);
}

TEST_CASE("changed paths compare arrays whole", "[read_extraction]") {
  CHECK(changed_paths(j(R"({"a":[1,{"b":2}]})"), j(R"({"a":[1,{"b":3}]})")) == std::vector<std::string>{"a"});
  CHECK(changed_paths(j(R"({"a":[1,2]})"), j(R"({"a":[1,2]})")) == none);
}

TEST_CASE("changed paths ignore exactly three metadata fields", "[read_extraction]") {
  auto old_value =
      j(R"({"metadata":{"resourceVersion":"1","generation":1,"managedFields":[1],"labels":{"a":"1"}},
                          "spec":{"resourceVersion":"1"},"metadata.generation":1})");
  auto new_value =
      j(R"({"metadata":{"resourceVersion":"2","generation":2,"managedFields":[2],"labels":{"a":"2"}},
                          "spec":{"resourceVersion":"2"},"metadata.generation":2})");
  CHECK(changed_paths(old_value, new_value) ==
        std::vector<std::string>{"metadata.generation", "metadata.labels.a", "spec.resourceVersion"});
  // Present on one side only, they are still ignored.
  CHECK(changed_paths(j(R"({"metadata":{"name":"x"}})"), j(R"({"metadata":{"name":"x","generation":3}})")) ==
        none);
}

TEST_CASE("changed paths of non-objects name the whole value", "[read_extraction]") {
  CHECK(changed_paths(json(1), json(2)) == std::vector<std::string>{""});
  CHECK(changed_paths(json("a"), json("a")) == none);
  CHECK(changed_paths(j("[1]"), j(R"({"a":1})")) == std::vector<std::string>{""});
}

TEST_CASE("changed paths compare deep values without recursing", "[read_extraction]") {
  json old_value = json::object();
  json new_value = json::object();
  old_value["a"] = nested_arrays(50000, 1);
  new_value["a"] = nested_arrays(50000, 2);
  CHECK(changed_paths(old_value, new_value) == std::vector<std::string>{"a"});
  new_value["a"] = nested_arrays(50000, 1);
  CHECK(changed_paths(old_value, new_value) == none);
}

TEST_CASE("event-log reads deliver events after last_seen in seq order", "[read_extraction]") {
  event_log_read out;
  auto body = j(R"({"events":[{"seq":5,"type":"ADDED"},{"seq":3,"type":"ADDED"},{"seq":4,"type":"MODIFIED"},
                              {"seq":2,"type":"ADDED"},{"seq":4,"type":"DELETED"}]})");
  REQUIRE_FALSE(extract_event_log(body, 3, &out));
  REQUIRE(out.events.size() == 2);
  CHECK(out.events[0].fields["seq"] == 4);
  CHECK(out.events[0].fields["type"] == "MODIFIED");  // the first of a duplicated seq wins
  CHECK(out.events[1].fields["seq"] == 5);
  CHECK(out.last_seen == std::optional<std::uint64_t>(5));
}

TEST_CASE("a first event-log read delivers everything without a gap", "[read_extraction]") {
  event_log_read out;
  REQUIRE_FALSE(
      extract_event_log(j(R"({"events":[{"seq":10,"type":"A"},{"seq":11,"type":"B"}]})"), {}, &out));
  CHECK(types(out.events) == std::vector<std::string>{"A", "B"});
  CHECK(out.last_seen == std::optional<std::uint64_t>(11));
}

TEST_CASE("events beyond last_seen + 1 start with a GAP", "[read_extraction]") {
  event_log_read out;
  REQUIRE_FALSE(extract_event_log(j(R"({"events":[{"seq":7,"type":"B"},{"seq":6,"type":"A"}]})"), 3, &out));
  REQUIRE(types(out.events) == std::vector<std::string>{"GAP", "A", "B"});
  CHECK(out.events[0].fields == j(R"({"type":"GAP","from":4,"to":5,"missed":2})"));
  CHECK(out.events[0].object_key.empty());
  CHECK(default_notice_line(out.events[0].fields) == "GAP 2 events missed");

  // The oldest seq of the read decides, so an overlapping ring has no gap.
  REQUIRE_FALSE(extract_event_log(j(R"({"events":[{"seq":3,"type":"A"},{"seq":9,"type":"B"}]})"), 3, &out));
  CHECK(types(out.events) == std::vector<std::string>{"B"});
  REQUIRE_FALSE(extract_event_log(j(R"({"events":[{"seq":4,"type":"A"}]})"), 3, &out));
  CHECK(types(out.events) == std::vector<std::string>{"A"});
}

TEST_CASE("an event-log read without new events keeps last_seen", "[read_extraction]") {
  event_log_read out;
  REQUIRE_FALSE(extract_event_log(j(R"({"events":[{"seq":1,"type":"A"},{"seq":2,"type":"A"}]})"), 2, &out));
  CHECK(out.events.empty());
  CHECK(out.last_seen == std::optional<std::uint64_t>(2));
  REQUIRE_FALSE(extract_event_log(j(R"({"events":[]})"), {}, &out));
  CHECK(out.events.empty());
  CHECK_FALSE(out.last_seen);
  // Only older seqs than seen: the log started over (see the reset case).
  REQUIRE_FALSE(extract_event_log(j(R"({"events":[{"seq":1,"type":"A"}]})"), 7, &out));
  CHECK(types(out.events) == std::vector<std::string>{"GAP", "A"});
  CHECK(out.last_seen == std::optional<std::uint64_t>(1));
}

TEST_CASE("seqs near the top of the range do not overflow", "[read_extraction]") {
  event_log_read out;
  json body = {{"events", json::array({{{"seq", UINT64_MAX}, {"type", "A"}}})}};
  REQUIRE_FALSE(extract_event_log(body, UINT64_MAX - 1, &out));
  CHECK(types(out.events) == std::vector<std::string>{"A"});
  REQUIRE_FALSE(extract_event_log(body, UINT64_MAX, &out));
  CHECK(out.events.empty());
  CHECK(out.last_seen == std::optional<std::uint64_t>(UINT64_MAX));
}

TEST_CASE("event-log events keep the server's fields and gain keys", "[read_extraction]") {
  event_log_read out;
  auto body = j(R"({"events":[
      {"seq":1,"type":"ADDED","extra":[1],"object":{"metadata":{"uid":"u1","namespace":"default","name":"cm"}}},
      {"seq":2,"type":"ADDED","object":{"metadata":{"name":"node-1"}}},
      {"seq":3,"type":"ERROR","message":"watch failed"},
      {"seq":4,"type":"ADDED","object":"plain"}]})");
  REQUIRE_FALSE(extract_event_log(body, {}, &out));
  REQUIRE(out.events.size() == 4);
  CHECK(out.events[0].fields["extra"] == j("[1]"));
  CHECK(out.events[0].fields["key"] == "default/cm");
  CHECK(out.events[0].object_key == "u1");
  CHECK(out.events[1].fields["key"] == "node-1");
  CHECK(out.events[1].object_key == "node-1");
  CHECK(out.events[2].fields == j(R"({"seq":3,"type":"ERROR","message":"watch failed"})"));
  CHECK(out.events[2].object_key.empty());
  CHECK(default_notice_line(out.events[2].fields) == "ERROR watch failed");
  CHECK_FALSE(out.events[3].fields.contains("key"));
  CHECK(out.events[3].object_key.empty());
}

TEST_CASE("event-log MODIFIED gets `changed`, and a no-op is dropped", "[read_extraction]") {
  event_log_read out;
  auto body = j(R"({"events":[
      {"seq":1,"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"2"},"status":{"phase":"P"}},
                                 "old":{"metadata":{"name":"b","resourceVersion":"1"},"status":{"phase":"D"}}},
      {"seq":2,"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"3"}},
                                 "old":{"metadata":{"name":"b","resourceVersion":"2"}}},
      {"seq":3,"type":"MODIFIED","object":{"metadata":{"name":"b"}}}]})");
  REQUIRE_FALSE(extract_event_log(body, {}, &out));
  REQUIRE(out.events.size() == 2);
  CHECK(out.events[0].fields["changed"] == j(R"(["status.phase"])"));
  CHECK(out.events[1].fields["seq"] == 3);
  CHECK_FALSE(out.events[1].fields.contains("changed"));
  CHECK(out.last_seen == std::optional<std::uint64_t>(3));

  // A dropped no-op still counts as seen.
  REQUIRE_FALSE(extract_event_log(json{{"events", json::array({body["events"][1]})}}, 1, &out));
  CHECK(out.events.empty());
  CHECK(out.last_seen == std::optional<std::uint64_t>(2));
}

TEST_CASE("malformed event-log bodies name the field", "[read_extraction]") {
  auto error_of = [](const json& body) {
    event_log_read out;
    out.last_seen = 99;
    out.events.emplace_back();
    auto error = extract_event_log(body, 1, &out);
    CHECK(out.last_seen == std::optional<std::uint64_t>(99));  // untouched
    CHECK(out.events.size() == 1);
    return error.value_or("no error");
  };
  CHECK(error_of(j("[]")) == "body is not an object");
  CHECK(error_of(j("{}")) == "events is not an array");
  CHECK(error_of(j(R"({"events":{}})")) == "events is not an array");
  CHECK(error_of(j(R"({"events":[1]})")) == "events[0] is not an object");
  CHECK(error_of(j(R"({"events":[{"seq":1,"type":"A"},{"seq":2,"type":"A"},{"seq":-1,"type":"A"}]})")) ==
        "events[2].seq is not a non-negative integer");
  CHECK(error_of(j(R"({"events":[{"seq":1.5,"type":"A"}]})")) ==
        "events[0].seq is not a non-negative integer");
  CHECK(error_of(j(R"({"events":[{"seq":"1","type":"A"}]})")) ==
        "events[0].seq is not a non-negative integer");
  CHECK(error_of(j(R"({"events":[{"type":"A"}]})")) == "events[0].seq is not a non-negative integer");
  CHECK(error_of(j(R"({"events":[{"seq":1,"type":7}]})")) == "events[0].type is not a string");
  CHECK(error_of(j(R"({"events":[{"seq":1}]})")) == "events[0].type is not a string");
  json deep = {{"events", json::array({{{"seq", 1}, {"type", "A"}, {"object", nested_arrays(300, 1)}}})}};
  CHECK(error_of(deep) == "events[0] nests deeper than 256 levels");
}

TEST_CASE("a large event log is handled", "[read_extraction]") {
  json events = json::array();
  for (int i = 20000; i > 0; --i) events.push_back({{"seq", i}, {"type", "ADDED"}});
  event_log_read out;
  REQUIRE_FALSE(extract_event_log(json{{"events", std::move(events)}}, 10000, &out));
  REQUIRE(out.events.size() == 10000);
  CHECK(out.events.front().fields["seq"] == 10001);
  CHECK(out.events.back().fields["seq"] == 20000);
}

TEST_CASE("default lines name Kubernetes objects by namespace/name", "[read_extraction]") {
  CHECK(default_notice_line(
            j(R"({"type":"ADDED","object":{"metadata":{"namespace":"default","name":"final-check"}}})")) ==
        "ADDED default/final-check");
  CHECK(default_notice_line(j(R"({"type":"DELETED","key":"u1","item":{"metadata":{"name":"node-1"}}})")) ==
        "DELETED node-1");
  CHECK(default_notice_line(
            j(R"({"type":"ADDED","key":"k","new":{"metadata":{"name":"n","namespace":""}}})")) == "ADDED n");
}

TEST_CASE("default lines show up to three changes of a MODIFIED", "[read_extraction]") {
  auto event = j(R"({"type":"MODIFIED","object":{"metadata":{"name":"bid-1"},"status":{"phase":"Published"}},
                     "old":{"metadata":{"name":"bid-1"},"status":{"phase":"Deciding"}}})");
  CHECK(default_notice_line(event) == "MODIFIED bid-1 (status.phase: Deciding\xe2\x86\x92Published)");

  auto many =
      diff_states(j(R"({"x":{"a":1,"b":1,"c":1,"d":1,"e":1}})"), j(R"({"x":{"a":2,"b":[2],"c":"s","d":2}})"));
  REQUIRE(many.size() == 1);
  CHECK(default_notice_line(many[0].fields) ==
        "MODIFIED x (a: 1\xe2\x86\x92"
        "2, b: 1\xe2\x86\x92[2], c: 1\xe2\x86\x92s, +2 more)");

  auto added_key = diff_states(j(R"({"x":{}})"), j(R"({"x":{"a":null}})"));
  REQUIRE(added_key.size() == 1);
  CHECK(default_notice_line(added_key[0].fields) == "MODIFIED x (a: \xe2\x88\x85\xe2\x86\x92null)");
}

TEST_CASE("default lines for state diffs use the key", "[read_extraction]") {
  auto events = diff_states(j(R"({"todo":"a"})"), j(R"({"todo":"b","owner":"me"})"));
  REQUIRE(events.size() == 2);
  CHECK(default_notice_line(events[0].fields) == "ADDED owner");
  CHECK(default_notice_line(events[1].fields) ==
        "MODIFIED todo (a\xe2\x86\x92"
        "b)");
  auto deleted = diff_states(j(R"({"todo":"a"})"), json::object());
  REQUIRE(deleted.size() == 1);
  CHECK(default_notice_line(deleted[0].fields) == "DELETED todo");
  auto changed = diff_states(json("v1"), json("v2"));
  REQUIRE(changed.size() == 1);
  CHECK(default_notice_line(changed[0].fields) == "CHANGED");
}

TEST_CASE("default lines cut long values on a UTF-8 boundary", "[read_extraction]") {
  auto line_for = [](const std::string& old_value, const std::string& new_value) {
    return default_notice_line(
        json{{"type", "MODIFIED"}, {"key", "k"}, {"old", old_value}, {"new", new_value}});
  };
  std::string forty(40, 'x');
  CHECK(line_for(forty, "b") == "MODIFIED k (" + forty + "\xe2\x86\x92" + "b)");
  CHECK(line_for(forty + "y", "b") == "MODIFIED k (" + forty + "\xe2\x80\xa6\xe2\x86\x92" + "b)");
  std::string thirty_eight(38, 'x');
  CHECK(line_for(thirty_eight + "\xc3\xa9", "b") ==
        "MODIFIED k (" + thirty_eight + "\xc3\xa9\xe2\x86\x92" + "b)");
  // "é" would take bytes 40 and 41: it is left out whole.
  std::string thirty_nine(39, 'x');
  CHECK(line_for(thirty_nine + "\xc3\xa9", "b") ==
        "MODIFIED k (" + thirty_nine + "\xe2\x80\xa6\xe2\x86\x92" + "b)");
  // Non-strings are cut as compact JSON.
  auto array_line = default_notice_line(
      json{{"type", "MODIFIED"}, {"key", "k"}, {"old", json::array({forty})}, {"new", 1}});
  CHECK(array_line == "MODIFIED k ([\"" + std::string(38, 'x') + "\xe2\x80\xa6\xe2\x86\x92" + "1)");
}

TEST_CASE("default lines for GAP, ERROR and anything else", "[read_extraction]") {
  CHECK(default_notice_line(j(R"({"type":"GAP","from":1,"to":12,"missed":12})")) == "GAP 12 events missed");
  CHECK(default_notice_line(j(R"({"type":"ERROR","seq":4,"message":"kubectl: forbidden"})")) ==
        "ERROR kubectl: forbidden");
  CHECK(default_notice_line(j(R"({"type":"ERROR","message":"line 1\nline 2"})")) == "ERROR line 1 line 2");
  CHECK(default_notice_line(j(R"({"type":"ERROR","message":{"code":1}})")) == R"(ERROR {"code":1})");
  CHECK(default_notice_line(j(R"({"type":"ERROR"})")) == "ERROR");
  CHECK(default_notice_line(j(R"({"type":"GAP","missed":"many"})")) == R"({"missed":"many","type":"GAP"})");
  CHECK(default_notice_line(j(R"({"type":"GAP","reason":"reconnected:\nlost"})")) == "GAP reconnected: lost");
  CHECK(default_notice_line(j(R"({"type":"GAP","reason":7})")) == R"({"reason":7,"type":"GAP"})");
  CHECK(default_notice_line(j(R"({"type":"PING","seq":3})")) == R"({"seq":3,"type":"PING"})");
  CHECK(default_notice_line(j(R"({"seq":3})")) == R"({"seq":3})");
  CHECK(default_notice_line(json(5)) == "5");
  CHECK(default_notice_line(json()) == "null");
}

TEST_CASE("default lines stay one line of valid UTF-8", "[read_extraction]") {
  CHECK(default_notice_line(json{{"type", "ADDED"},
                                 {"key",
                                  "a\xff"
                                  "b\nc"}}) ==
        "ADDED a\xef\xbf\xbd"
        "b c");
  CHECK(default_notice_line(json{{"type", "X"}, {"v", "\xff"}}) == "{\"type\":\"X\",\"v\":\"\xef\xbf\xbd\"}");
  CHECK(default_notice_line(json{{"type", "MODIFIED"}, {"key", "k"}, {"old", "\xc3"}, {"new", "\xe2\x86"}}) ==
        "MODIFIED k (\xef\xbf\xbd\xe2\x86\x92\xef\xbf\xbd\xef\xbf\xbd)");
  CHECK(default_notice_line(json{{"type", "ADDED"}, {"object", nested_arrays(1000, 1)}}) ==
        "event nests deeper than 256 levels");
}

TEST_CASE("an event log whose seqs go backwards started over", "[read_extraction]") {
  tidings::core::event_log_read out;
  nlohmann::json body = {{"events", {{{"seq", 3}, {"type", "ADDED"}}, {{"seq", 4}, {"type", "DELETED"}}}}};
  REQUIRE_FALSE(tidings::core::extract_event_log(body, std::uint64_t{500}, &out));
  REQUIRE(out.events.size() == 3);
  CHECK(out.events[0].fields["type"] == "GAP");
  CHECK(out.events[0].fields["reset"] == true);
  CHECK(out.events[1].fields["seq"] == 3);
  CHECK(out.events[2].fields["seq"] == 4);
  CHECK(out.last_seen == std::optional<std::uint64_t>(4));
  CHECK(tidings::core::default_notice_line(out.events[0].fields) ==
        "GAP the event log started over (now at seq 4); events may have been missed");

  // A read that only repeats what was seen is not a restart.
  tidings::core::event_log_read same;
  REQUIRE_FALSE(tidings::core::extract_event_log(body, std::uint64_t{4}, &same));
  CHECK(same.events.empty());
}
