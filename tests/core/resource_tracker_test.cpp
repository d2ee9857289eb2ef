#include <catch2/catch.hpp>

#include "core/resource_tracker.hpp"

using tidings::core::resource_tracker;

namespace {

std::vector<std::string> types(const resource_tracker::outcome& o) {
  std::vector<std::string> out;
  for (const auto& e : o.events) out.push_back(e.fields.value("type", ""));
  return out;
}

}  // namespace

TEST_CASE("the first state read is a baseline, later reads are diffs", "[resource_tracker]") {
  resource_tracker t;
  CHECK(t.apply(false, R"({"a":1,"b":2})").events.empty());
  CHECK(t.shape_name() == "state");
  auto next = t.apply(false, R"({"a":1,"b":3,"c":4})");
  CHECK(types(next) == std::vector<std::string>{"MODIFIED", "ADDED"});
  CHECK(next.events[0].fields["key"] == "b");
  CHECK(t.state() == nlohmann::json::parse(R"({"a":1,"b":3,"c":4})"));
  CHECK(t.apply(false, R"({"a":1,"b":3,"c":4})").events.empty());
}

TEST_CASE("a restored state makes the first read a diff against it", "[resource_tracker]") {
  resource_tracker t;
  t.restore("state", R"([{"id":"x","v":1},{"id":"y","v":1}])", std::nullopt);
  auto first = t.apply(false, R"([{"id":"x","v":2},{"id":"z","v":1}])");
  CHECK(types(first) == std::vector<std::string>{"MODIFIED", "ADDED", "DELETED"});
}

TEST_CASE("text that is not JSON is diffed as a whole", "[resource_tracker]") {
  resource_tracker t;
  t.apply(false, "hello");
  auto changed = t.apply(false, "hello, world");
  REQUIRE(changed.events.size() == 1);
  CHECK(changed.events[0].fields["type"] == "CHANGED");
}

TEST_CASE("event-log reads deliver the events after the last seq, with GAP", "[resource_tracker]") {
  resource_tracker t;
  CHECK(t.apply(true, R"({"events":[{"seq":1,"type":"ADDED"},{"seq":2,"type":"ADDED"}]})").events.empty());
  CHECK(t.last_seq() == std::optional<std::uint64_t>(2));
  auto next = t.apply(true, R"({"events":[{"seq":2,"type":"ADDED"},{"seq":3,"type":"DELETED"}]})");
  CHECK(types(next) == std::vector<std::string>{"DELETED"});
  auto gap = t.apply(true, R"({"events":[{"seq":7,"type":"ADDED"}]})");
  CHECK(types(gap) == std::vector<std::string>{"GAP", "ADDED"});
}

TEST_CASE("an empty event-log baseline delivers every later event", "[resource_tracker]") {
  resource_tracker t;
  CHECK(t.apply(true, R"({"events":[]})").events.empty());
  CHECK_FALSE(t.last_seq());
  auto next = t.apply(true, R"({"events":[{"seq":1,"type":"ADDED"}]})");
  CHECK(types(next) == std::vector<std::string>{"ADDED"});
}

TEST_CASE("a restored last seq carries on across a restart", "[resource_tracker]") {
  resource_tracker t;
  t.restore("event-log", "", 5);
  auto next = t.apply(true, R"({"events":[{"seq":5,"type":"ADDED"},{"seq":6,"type":"MODIFIED"}]})");
  CHECK(types(next) == std::vector<std::string>{"MODIFIED"});
}

TEST_CASE("a malformed event-log read changes nothing", "[resource_tracker]") {
  resource_tracker t;
  t.apply(true, R"({"events":[{"seq":1,"type":"ADDED"}]})");
  CHECK_FALSE(t.apply(true, "not json").error.empty());
  CHECK_FALSE(t.apply(true, R"({"events":[{"seq":-1}]})").error.empty());
  CHECK(t.last_seq() == std::optional<std::uint64_t>(1));
}

TEST_CASE("a change of shape starts over without events", "[resource_tracker]") {
  resource_tracker t;
  t.apply(false, R"({"a":1})");
  CHECK(t.apply(true, R"({"events":[{"seq":1,"type":"ADDED"}]})").events.empty());
  CHECK(t.shape_name() == "event-log");
  CHECK(t.apply(false, R"({"a":2})").events.empty());
  CHECK(t.shape_name() == "state");
}

TEST_CASE("an unusable snapshot restores nothing", "[resource_tracker]") {
  resource_tracker t;
  t.restore("state", "{not json", std::nullopt);
  CHECK(t.current_shape() == resource_tracker::shape::none);
  t.restore("weird", "", 3);
  CHECK(t.current_shape() == resource_tracker::shape::none);
}

TEST_CASE("a log that starts over after a restart is a baseline, not a GAP", "[resource_tracker]") {
  resource_tracker t;
  t.restore("event-log", "", 57);
  CHECK(t.apply(true, R"({"events":[]})").events.empty());
  auto next = t.apply(true, R"({"events":[{"seq":1,"type":"ADDED"}]})");
  CHECK(types(next) == std::vector<std::string>{"ADDED"});

  resource_tracker u;
  u.restore("event-log", "", 57);
  CHECK(u.apply(true, R"({"events":[{"seq":3,"type":"ADDED"}]})").events.empty());
  CHECK(u.last_seq() == std::optional<std::uint64_t>(3));
  CHECK(types(u.apply(true, R"({"events":[{"seq":4,"type":"DELETED"}]})")) ==
        std::vector<std::string>{"DELETED"});
}
