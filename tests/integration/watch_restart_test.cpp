// Watches across restarts: specs come back, one restore notice lists them,
// and changes the watch had not yet notified when the node died produce
// their notice exactly once afterwards (the notice and the watch's cursor
// commit together).

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

// The restore notices in the tenant's `watches` stream, awaited over SSE.
std::vector<data_event> await_restore_notices(const client::endpoint& ep, std::size_t count) {
  client::sse_stream s(ep, sse_target({"watches"}, "0000000000000000:0"));
  await_hello(s);
  return collect_data_events(s, count, 20s).events;
}

}  // namespace

TEST_CASE("after kill -9 a restored watch notifies pending changes exactly once", "[watch][restart]") {
  temp_dir dir;
  std::string first_notice_cursor;
  {
    tidingsd_process node(dir.path());
    auto ep = node.endpoint();
    publish_state(ep, "memo", "/notes", {{"owner", "ann"}});
    start_watch_ok(ep, {{"name", "notes"}, {"uri", "stream://memo/notes"}, {"debounce_ms", 0}});
    start_watch_ok(
        ep,
        {{"name", "slow"}, {"uri", "stream://memo/notes"}, {"debounce_ms", 600000}, {"max_wait_ms", 600000}});
    client::sse_stream notices(ep, sse_target({"watch:notes"}));
    await_hello(notices);

    publish_state(ep, "memo", "/notes", {{"owner", "bob"}});
    auto first = await_notices(notices, 1, 20s);
    REQUIRE(first.size() == 1);
    CHECK(notice_lines(first[0]) == lines{"MODIFIED owner (ann→bob)"});
    first_notice_cursor = first[0].cursor;

    // `slow` holds these for ten minutes; `notes` may or may not have
    // committed them when the node dies. Either way each appears once.
    publish_state(ep, "memo", "/notes", {{"owner", "bob"}, {"todo", "milk"}});
    publish_state(ep, "memo", "/notes", {{"owner", "cy"}, {"todo", "milk"}});
    node.kill9();
  }

  tidingsd_process node(dir.path(), {"--verbose"});
  auto ep = node.endpoint();
  auto restored = await_restore_notices(ep, 1);
  REQUIRE(restored.size() == 1);
  CHECK(restored[0].type == "RESTORE");
  CHECK(restored[0].data["restored"] == json{"notes", "slow"});
  CHECK(restored[0].data["text"] == "restored 2 watches: notes, slow");

  auto list = list_watches(ep);
  REQUIRE(list.size() == 2);
  for (const auto& w : list) {
    CHECK(w["state"] == "running");
    CHECK(w["restore_failed"] == false);
    CHECK(w["shape"] == "state");  // restored with the position, not guessed
  }

  // A sentinel change after the restart: everything before it arrives first,
  // so seeing it proves nothing was notified twice.
  client::sse_stream after(ep, sse_target({"watch:notes"}, first_notice_cursor));
  await_hello(after);
  publish_state(ep, "memo", "/notes", {{"owner", "cy"}, {"todo", "eggs"}});
  std::vector<std::string> seen;
  for (;;) {
    auto got = await_notices(after, 1, 20s);
    REQUIRE(got.size() == 1);
    for (auto& line : notice_lines(got[0])) seen.push_back(line);
    if (seen.back() == "MODIFIED todo (milk→eggs)") break;
  }
  CHECK(seen == lines{"ADDED todo", "MODIFIED owner (bob→cy)", "MODIFIED todo (milk→eggs)"});

  // Stopping `slow` flushes what it held since before the crash, once.
  client::sse_stream slow(ep, sse_target({"watch:slow"}, "0000000000000000:0"));
  await_hello(slow);
  // `notes` having seen the sentinel says nothing of `slow`: wait until its
  // filter has taken all four changes, or the stop flushes fewer.
  REQUIRE(poll_until(20s, [&] {
    for (const auto& w : list_watches(ep))
      if (w["name"] == "slow") return w["events"].get<std::uint64_t>() >= 4;
    return false;
  }));
  CHECK(stop_watch(ep, "slow"));
  auto flushed = await_notices(slow, 1, 20s);
  REQUIRE(flushed.size() == 1);
  CHECK(notice_lines(flushed[0]) == lines{"MODIFIED owner (ann→bob)", "ADDED todo", "MODIFIED owner (bob→cy)",
                                          "MODIFIED todo (milk→eggs)"});
  CHECK(read_history(ep, "watch:slow").size() == 1);
}

TEST_CASE("a restart restores each watch once and drops the ones over the limit", "[watch][restart]") {
  temp_dir dir;
  {
    tidingsd_process node(dir.path());
    auto ep = node.endpoint();
    for (const char* name : {"a", "b", "c"}) start_watch_ok(ep, {{"name", name}, {"uri", "stream://memo"}});
    REQUIRE(node.terminate() == 0);
  }
  {
    tidingsd_process node(dir.path(), {"--max-watches", "2"});
    auto ep = node.endpoint();
    auto notices = await_restore_notices(ep, 1);
    REQUIRE(notices.size() == 1);
    CHECK(notices[0].data["restored"] == json{"a", "b"});
    REQUIRE(notices[0].data["dropped"].size() == 1);
    CHECK(notices[0].data["dropped"][0]["name"] == "c");
    CHECK(list_watches(ep).size() == 2);
    REQUIRE(node.terminate() == 0);
  }
  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto notices = await_restore_notices(ep, 2);
  REQUIRE(notices.size() == 2);  // one per start
  CHECK(notices[1].data["restored"] == json{"a", "b"});
  CHECK(notices[1].data["dropped"].empty());
  CHECK(list_watches(ep).size() == 2);
}

TEST_CASE("a restore that fails for a passing reason is listed and retried until it starts",
          "[watch][restart]") {
  temp_dir dir;
  {
    tidingsd_process node(dir.path());
    start_watch_ok(node.endpoint(), {{"name", "later"}, {"uri", "stream://later/notes"}, {"debounce_ms", 0}});
    REQUIRE(node.terminate() == 0);
  }
  // No room for streams nobody has published to: the watched stream is one.
  // (So this test reads history instead of subscribing to streams that do
  // not exist yet, and awaits log lines.)
  tidingsd_process node(dir.path(), {"--max-unknown-streams", "0", "--verbose"});
  auto ep = node.endpoint();
  REQUIRE(node.await_log(R"("event":"watch.notice","stream":"watches","type":"RESTORE")", 20s));
  auto notices = read_history(ep, "watches");
  REQUIRE(notices.size() == 1);
  auto restore = notices[0]["data"];
  CHECK(restore["restored"].empty());
  REQUIRE(restore["failed"].size() == 1);
  CHECK(restore["failed"][0]["name"] == "later");
  auto listed = list_watches(ep);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["restore_failed"] == true);
  CHECK(listed[0]["state"] == "restore_failed");

  // Once the stream exists the next retry starts the watch, from where it was.
  publish_state(ep, "later", "/notes", {{"owner", "ann"}});
  REQUIRE(node.await_log(R"("event":"watch.restored","watch":"later","ok":true)", 20s));
  REQUIRE(node.await_log(R"("event":"watch.notice","watch":"later")", 20s));
  auto got = read_history(ep, "watch:later");
  REQUIRE(got.size() == 1);
  CHECK(got[0]["data"]["lines"] == json{"ADDED owner"});
  CHECK(list_watches(ep)[0]["state"] == "running");
}
