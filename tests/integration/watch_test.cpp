// Watches against the real tidingsd: a Lua filter over published state
// snapshots, notices batched by the debounce on watch:NAME, start-time
// validation, the per-tenant limit, live filter errors and stop.

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/bounded_poll.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;
using lines = std::vector<std::string>;

// Counts ADDED objects in a global, so it also shows that the watch's Lua
// scope persists from one event to the next; DELETED is dropped.
constexpr const char* bids_filter = R"lua(
if event.type == "ADDED" then
  added = (added or 0) + 1
  return "new bid " .. event.key .. " #" .. added
elseif event.type == "MODIFIED" then
  return event.key .. ": " .. table.concat(event.changed, ",") .. " -> " .. event.new.status.phase
end
)lua";

json bids(std::initializer_list<std::pair<const char*, const char*>> phases) {
  json state = json::object();
  for (auto [key, phase] : phases)
    state[key] = {{"status", {{"phase", phase}}}, {"metadata", {{"generation", 1}}}};
  return state;
}

json find_watch(const json& list, const std::string& name) {
  for (const auto& w : list)
    if (w.value("name", "") == name) return w;
  return nullptr;
}

}  // namespace

TEST_CASE("a filtered watch turns published snapshots into debounced notices on watch:NAME", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish_state(ep, "market", "/bids", bids({{"bid-1", "Deciding"}}));  // the baseline

  auto started = start_watch_ok(ep, {{"name", "bids"},
                                     {"uri", "stream://market/bids"},
                                     {"on_event", bids_filter},
                                     {"debounce_ms", 1500},
                                     {"max_wait_ms", 20000}});
  CHECK(started == json{{"name", "bids"}, {"uri", "stream://market/bids"}, {"shape", "state"}});

  client::sse_stream notices(ep, sse_target({"watch:bids"}));
  await_hello(notices);

  // A burst: three updates inside the quiet period become one notice.
  publish_state(ep, "market", "/bids", bids({{"bid-1", "Deciding"}, {"bid-2", "Deciding"}}));
  publish_state(ep, "market", "/bids", bids({{"bid-1", "Published"}, {"bid-2", "Deciding"}}));
  publish_state(ep, "market", "/bids", bids({{"bid-1", "Published"}, {"bid-3", "Deciding"}}));
  // Only the generation changes: a no-op MODIFIED, dropped before the filter.
  auto same = bids({{"bid-1", "Published"}, {"bid-3", "Deciding"}});
  same["bid-1"]["metadata"]["generation"] = 2;
  publish_state(ep, "market", "/bids", same);
  // Elsewhere in the stream: not under the watched path.
  publish_state(ep, "market", "/asks", bids({{"ask-1", "Open"}}));

  auto first = await_notices(notices, 1, 20s);
  REQUIRE(first.size() == 1);
  CHECK(notice_lines(first[0]) ==
        lines{"new bid bid-2 #1", "bid-1: status.phase -> Published", "new bid bid-3 #2"});
  CHECK(first[0].data["watch"] == "bids");
  CHECK(first[0].data["uri"] == "stream://market/bids");

  // A later change is a notice of its own.
  publish_state(ep, "market", "/bids", bids({{"bid-1", "Won"}, {"bid-3", "Deciding"}}));
  auto second = await_notices(notices, 1, 20s);
  REQUIRE(second.size() == 1);
  CHECK(notice_lines(second[0]) == lines{"bid-1: status.phase -> Won"});

  auto w = find_watch(list_watches(ep), "bids");
  REQUIRE(w.is_object());
  CHECK(w["shape"] == "state");
  CHECK(w["state"] == "running");
  CHECK(w["restore_failed"] == false);
  CHECK(w["notices"] == 2);
  CHECK(w["events"] == 5);  // ADDED, MODIFIED, DELETED, ADDED, MODIFIED
}

TEST_CASE("without a filter the default lines collapse within a notice", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  start_watch_ok(ep, {{"name", "docs"}, {"uri", "stream://library/docs"}, {"debounce_ms", 1000}});
  client::sse_stream notices(ep, sse_target({"watch:docs"}));
  await_hello(notices);

  // Plain events (not snapshots) pass through as TYPE key.
  publish(ep, "library", event_json("/docs/a.md", "MODIFIED", {{"title", "A"}}));
  publish(ep, "library", event_json("/docs/a.md", "MODIFIED", {{"title", "A2"}}));  // the same line
  publish(ep, "library", event_json("/docs/b.md", "ADDED", {{"title", "B"}}));
  publish(ep, "library", event_json("/other/c.md", "ADDED", {{"title", "C"}}));  // outside the prefix

  auto got = await_notices(notices, 1, 20s);
  REQUIRE(got.size() == 1);
  CHECK(notice_lines(got[0]) == lines{"MODIFIED /docs/a.md \u00d72", "ADDED /docs/b.md"});

  // Plain events have no object identity: the same line later is news again.
  publish(ep, "library", event_json("/docs/a.md", "MODIFIED", {{"title", "A3"}}));
  auto again = await_notices(notices, 1, 20s);
  REQUIRE(again.size() == 1);
  CHECK(notice_lines(again[0]) == lines{"MODIFIED /docs/a.md"});
}

TEST_CASE("a filter that cannot start fails POST /v1/watches with 400 and creates nothing", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--filter-budget-ms", "300"});
  auto ep = node.endpoint();

  struct bad_filter {
    const char* source;
    const char* message_part;
  };
  const bad_filter cases[] = {
      {"return event.type ..", "on_event:1:"},                                // syntax error, with its line
      {"local x = 1\nreturn fmt(event)", "on_event:2:"},                      // an undefined global
      {"os.execute('touch /tmp/tidings-escaped')", "'os' is not available"},  // outside the sandbox
      {"while true do end", "budget"},                                        // never returns
      {"\x1bLuaS\x00\x19\x93", "bytecode"},                                   // bytecode
  };
  for (const auto& c : cases) {
    auto r = start_watch(ep, {{"name", "bad"}, {"uri", "stream://memo"}, {"on_event", c.source}});
    INFO(c.source);
    CHECK(r.status == 400);
    auto error = parse_body(r).value("error", "");
    CHECK(error.find(c.message_part) != std::string::npos);
  }
  // Missing keys on the sample event are fine (the ADR's rule).
  CHECK(
      start_watch(
          ep, {{"name", "deep"}, {"uri", "stream://memo"}, {"on_event", "return event.object.metadata.name"}})
          .status == 201);

  auto list = list_watches(ep);
  CHECK(find_watch(list, "bad").is_null());
  CHECK(find_watch(list, "deep").is_object());
  client::http_connection conn(ep);
  CHECK(conn.request("GET", "/v1/streams/watch:bad").status == 404);

  // Bad requests that never reach Lua.
  CHECK(start_watch(ep, {{"name", "x"}, {"uri", "kcp-events://watch/root:app/configmaps"}}).status == 400);
  CHECK(start_watch(ep, {{"name", "Bad Name"}, {"uri", "stream://memo"}}).status == 400);
  CHECK(start_watch(ep, {{"name", "x"}, {"uri", "stream://memo"}, {"on_event", 42}}).status == 400);
  CHECK(start_watch(ep, {{"name", "x"}, {"uri", "stream://memo"}, {"debounce_ms", -1}}).status == 400);
  CHECK(start_watch(ep, {{"name", "x"}, {"uri", "stream://memo"}, {"shape", "state"}}).status == 400);
  CHECK(start_watch(ep, {{"uri", "stream://memo"}}).status == 400);
  CHECK(conn.request("POST", "/v1/watches", "{not json", {{"Content-Type", "application/json"}}).status ==
        400);
}

TEST_CASE("the sixth watch of a tenant gets 409 while other requests are served", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  for (int i = 1; i <= 5; ++i)
    start_watch_ok(ep, {{"name", "w" + std::to_string(i)}, {"uri", "stream://memo/w" + std::to_string(i)}});

  auto sixth = start_watch(ep, {{"name", "w6"}, {"uri", "stream://memo"}});
  CHECK(sixth.status == 409);
  CHECK(parse_body(sixth).value("error", "").find("5 watches") != std::string::npos);
  // The node goes on serving: publishes, reads, and a replacement of an
  // existing name (which is not a sixth watch).
  CHECK_FALSE(publish(ep, "memo", event_json("/w1", "ADDED", 1)).empty());
  CHECK(list_watches(ep).size() == 5);
  auto replaced =
      start_watch(ep, {{"name", "w1"}, {"uri", "stream://memo/other"}, {"on_event", "return 'x'"}});
  CHECK(replaced.status == 200);
  CHECK(find_watch(list_watches(ep), "w1")["uri"] == "stream://memo/other");

  CHECK(stop_watch(ep, "w5"));
  CHECK_FALSE(stop_watch(ep, "w5"));
  CHECK(start_watch(ep, {{"name", "w6"}, {"uri", "stream://memo"}}).status == 201);
  client::http_connection conn(ep);
  CHECK(conn.request("GET", "/v1/watches/w5").status == 404);
  CHECK(conn.request("GET", "/v1/watches/w6").status == 200);
}

TEST_CASE("a filter error on a live event becomes a notice and the watch keeps running", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish_state(ep, "memo", "/notes", json::object());
  start_watch_ok(ep, {{"name", "notes"},
                      {"uri", "stream://memo/notes"},
                      {"debounce_ms", 0},
                      {"on_event",
                       "if event.key == 'boom' then error('cannot handle ' .. event.key) end\n"
                       "return event.type .. ' ' .. event.key"}});
  client::sse_stream notices(ep, sse_target({"watch:notes"}));
  await_hello(notices);

  publish_state(ep, "memo", "/notes", {{"boom", 1}});
  auto failed = await_notices(notices, 1, 20s);
  REQUIRE(failed.size() == 1);
  auto error_lines = notice_lines(failed[0]);
  REQUIRE(error_lines.size() == 1);
  CHECK(error_lines[0].find("filter error: on_event:1: cannot handle boom") == 0);

  publish_state(ep, "memo", "/notes", {{"boom", 1}, {"fine", 2}});
  auto next = await_notices(notices, 1, 20s);
  REQUIRE(next.size() == 1);
  CHECK(notice_lines(next[0]) == lines{"ADDED fine"});
  CHECK(find_watch(list_watches(ep), "notes")["filter_errors"] == 1);
}

TEST_CASE("watch notices are resumable and only the watch publishes them", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  start_watch_ok(ep, {{"name", "n"}, {"uri", "stream://memo"}, {"debounce_ms", 0}});
  client::http_connection conn(ep);
  auto refused = conn.request("POST", events_target("watch:n"), event_json("/x", "ADDED", 1),
                              {{"Content-Type", "application/json"}});
  CHECK(refused.status == 400);
  CHECK(conn.request("POST", events_target("watches"), event_json("/x", "ADDED", 1),
                     {{"Content-Type", "application/json"}})
            .status == 400);

  client::sse_stream first(ep, sse_target({"watch:n"}));
  await_hello(first);
  publish(ep, "memo", event_json("/a", "ADDED", 1));
  auto one = await_notices(first, 1, 20s);
  REQUIRE(one.size() == 1);
  publish(ep, "memo", event_json("/b", "ADDED", 1));
  publish(ep, "memo", event_json("/c", "ADDED", 1));

  // Resuming after the first notice yields the later ones, in order.
  client::sse_stream resumed(ep, sse_target({"watch:n"}, one[0].cursor));
  await_hello(resumed);
  auto later = await_notices(resumed, 2, 20s);
  REQUIRE(later.size() == 2);
  CHECK(notice_lines(later[0]) == lines{"ADDED /b"});
  CHECK(notice_lines(later[1]) == lines{"ADDED /c"});
}

TEST_CASE("a filter slower than the stream catches up page by page without losing events", "[watch]") {
  temp_dir dir;
  // A tiny delivery queue: every live batch overflows it, so the filter
  // keeps falling back to reading pages from its own cursor.
  tidingsd_process node(dir.path(), {"--watch-queue-frames", "8"});
  auto ep = node.endpoint();
  start_watch_ok(ep, {{"name", "counter"},
                      {"uri", "stream://load"},
                      {"debounce_ms", 0},
                      {"on_event",
                       "local x = 0\nfor i = 1, 20000 do x = x + i end\n"
                       "seen = (seen or 0) + 1\n"
                       "if event.object ~= seen then return 'out of order at ' .. seen end\n"
                       "if seen % 250 == 0 then return 'n=' .. seen end"}});
  client::sse_stream notices(ep, sse_target({"watch:counter"}));
  await_hello(notices);
  int next = 1;
  for (int batch = 0; batch < 10; ++batch) {
    json events = json::array();
    for (int i = 0; i < 100; ++i) events.push_back(json::parse(event_json("/e", "ADDED", next++)));
    publish_batch(ep, "load", events.dump());
  }
  std::vector<std::string> seen;
  while (seen.empty() || seen.back() != "n=1000") {
    auto got = await_notices(notices, 1, 30s);
    REQUIRE(got.size() == 1);
    for (auto& line : notice_lines(got[0])) seen.push_back(line);
  }
  CHECK(seen == lines{"n=250", "n=500", "n=750", "n=1000"});
}

TEST_CASE("a filter reads other resources through read_resource and list_resources", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish_state(ep, "config", "/owners", {{"bid-1", "ann"}});
  publish(ep, "memo", event_json("/notes", "ADDED", 1));
  start_watch_ok(ep,
                 {{"name", "enrich"}, {"uri", "stream://market/bids"}, {"debounce_ms", 0}, {"on_event", R"lua(
local owners = read_resource("stream://config/owners")
local names = {}
for _, r in ipairs(list_resources()) do names[#names + 1] = r.name end
table.sort(names)
return event.key .. " owned by " .. tostring(owners[event.key]) .. " among " .. table.concat(names, ","))lua"}});
  client::sse_stream out(ep, sse_target({"watch:enrich"}));
  await_hello(out);
  publish_state(ep, "market", "/bids", {{"bid-1", 1}});
  auto got = await_notices(out, 1, 20s);
  REQUIRE(got.size() == 1);
  CHECK(notice_lines(got[0]) == lines{"bid-1 owned by ann among config,market,memo"});
}

TEST_CASE("a path's baseline is its newest read even under a newer plain event", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish_state(ep, "memo", "/notes", {{"owner", "ann"}, {"todo", "milk"}});
  publish(ep, "memo", event_json("/notes", "TOUCHED", {{"by", "cron"}}));
  auto started = start_watch_ok(ep, {{"name", "notes"}, {"uri", "stream://memo/notes"}, {"debounce_ms", 0}});
  CHECK(started["shape"] == "events");  // the newest event there is plain
  client::sse_stream out(ep, sse_target({"watch:notes"}));
  await_hello(out);
  publish_state(ep, "memo", "/notes", {{"owner", "bob"}, {"todo", "milk"}});
  auto got = await_notices(out, 1, 20s);
  REQUIRE(got.size() == 1);
  CHECK(notice_lines(got[0]) == lines{"MODIFIED owner (ann→bob)"});  // not everything ADDED
}

TEST_CASE("replacing a watch's filter carries on from its last notice", "[watch]") {
  temp_dir dir;
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  publish_state(ep, "memo", "/notes", json::object());
  const json hold = {{"debounce_ms", 600000}, {"max_wait_ms", 600000}};
  auto old_spec =
      json{{"name", "rep"}, {"uri", "stream://memo/notes"}, {"on_event", "return 'old ' .. event.key"}};
  old_spec.update(hold);
  start_watch_ok(ep, old_spec);
  // Seen by the old filter, held by its debounce, never notified.
  publish_state(ep, "memo", "/notes", {{"a", 1}});
  publish_state(ep, "memo", "/notes", {{"a", 1}, {"b", 2}});

  client::sse_stream out(ep, sse_target({"watch:rep"}));
  await_hello(out);
  auto replaced = start_watch(ep, {{"name", "rep"},
                                   {"uri", "stream://memo/notes"},
                                   {"debounce_ms", 0},
                                   {"on_event", "return 'new ' .. event.key"}});
  REQUIRE(replaced.status == 200);
  publish_state(ep, "memo", "/notes", {{"a", 1}, {"b", 2}, {"c", 3}});
  std::vector<std::string> seen;
  while (seen.empty() || seen.back() != "new c") {
    auto got = await_notices(out, 1, 20s);
    REQUIRE(got.size() == 1);
    for (auto& line : notice_lines(got[0])) seen.push_back(line);
  }
  // Every change since the last notice, through the new filter, once.
  CHECK(seen == lines{"new a", "new b", "new c"});

  // Another URI is another source: the held lines go out, then a fresh start.
  start_watch_ok(ep, old_spec);
  publish_state(ep, "memo", "/notes", {{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}});
  // Stored is not yet seen: the move flushes what the filter holds, so wait
  // until it holds "d" (a slow, sanitized build lost this race).
  REQUIRE(poll_until(20s, [&] {
    for (const auto& w : list_watches(ep))
      if (w["name"] == "rep") return w["events"].get<std::uint64_t>() >= 1;
    return false;
  }));
  auto moved = start_watch(ep, {{"name", "rep"}, {"uri", "stream://memo/elsewhere"}, {"debounce_ms", 0}});
  REQUIRE(moved.status == 200);
  auto flushed = await_notices(out, 1, 20s);
  REQUIRE(flushed.size() == 1);
  CHECK(notice_lines(flushed[0]) == lines{"old d"});
}
