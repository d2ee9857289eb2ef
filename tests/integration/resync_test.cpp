// A resume point the node cannot honour losslessly gets a typed, terminal
// `resync` (never a silent gap, never a hang); history answers 410.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "core/cursor.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

struct resync_outcome {
  json data;
  bool closed_after = false;
  std::vector<data_event> data_events_before;
};

// Opens a session resuming from `cursor` and reads up to the resync. The
// hello is optional here: the contract does not say whether a session that is
// refused at once is greeted first.
resync_outcome resume_expecting_resync(const client::endpoint& ep, const std::string& stream,
                                       const std::string& cursor) {
  client::sse_stream session(ep, sse_target({stream}), {{"Last-Event-ID", cursor}});
  REQUIRE(session.status() == 200);
  resync_outcome out;
  for (;;) {
    auto m = next_non_heartbeat(session, 5s);
    REQUIRE(m);
    if (m->event == "hello") continue;
    if (m->event.empty()) {
      out.data_events_before.push_back(parse_data_event(*m));
      continue;
    }
    INFO("event " << m->event << ": " << m->data);
    REQUIRE(m->event == "resync");
    out.data = message_json(*m);
    break;
  }
  core::sse_message extra;
  auto r = session.next(extra, 5s);
  INFO("after resync: " << extra.event << " " << extra.data);
  out.closed_after = r == client::sse_stream::result::closed;
  return out;
}

std::string with_epoch(const std::string& cursor, std::uint64_t epoch) {
  auto c = cursor_of(cursor);
  c.epoch = epoch;
  return core::format_cursor(c);
}

std::string with_seq(const std::string& cursor, std::uint64_t seq) {
  auto c = cursor_of(cursor);
  c.seq = seq;
  return core::format_cursor(c);
}

}  // namespace

TEST_CASE("resume points outside the log get a terminal resync with a reason", "[resync]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--retention-events", "5"});
  auto ep = node.endpoint();
  std::vector<std::string> cursors;
  {
    client::http_connection conn(ep);
    for (int i = 1; i <= 20; ++i) cursors.push_back(publish(conn, "docs", event_json("/e", "ADDED", i)));
  }
  const auto head = cursors.back();
  auto info = parse_body(client::request(ep, "GET", "/v1/streams/docs"));
  INFO("stream info: " << info.dump());
  CHECK(info["head"] == head);
  CHECK(info["events"] == 5);
  CHECK(info["first"] == cursors[15]);

  SECTION("cursor_too_old") {
    auto out = resume_expecting_resync(ep, "docs", cursors[1]);
    CHECK(out.data_events_before.empty());
    CHECK(out.data["stream"] == "docs");
    CHECK(out.data["reason"] == "cursor_too_old");
    CHECK(out.data["head"] == head);
    CHECK(out.closed_after);
  }

  SECTION("epoch_changed") {
    const auto epoch = cursor_of(head).epoch;
    auto out = resume_expecting_resync(ep, "docs", with_epoch(cursors[17], epoch ^ 1));
    CHECK(out.data_events_before.empty());
    CHECK(out.data["stream"] == "docs");
    CHECK(out.data["reason"] == "epoch_changed");
    CHECK(out.data["head"] == head);
    CHECK(out.closed_after);
  }

  SECTION("unknown_stream") {
    auto out = resume_expecting_resync(ep, "nosuch", "0123456789abcdef:3");
    CHECK(out.data_events_before.empty());
    CHECK(out.data["stream"] == "nosuch");
    CHECK(out.data["reason"] == "unknown_stream");
    CHECK(out.closed_after);
  }

  SECTION("cursor_ahead") {
    auto out = resume_expecting_resync(ep, "docs", with_seq(head, 25));
    CHECK(out.data_events_before.empty());
    CHECK(out.data["reason"] == "cursor_ahead");
    CHECK(out.data["head"] == head);
    CHECK(out.closed_after);
  }

  SECTION("the first retained cursor itself is still a lossless resume") {
    // Resuming from seq 16 needs 17..20, all retained.
    client::sse_stream session(ep, sse_target({"docs"}), {{"Last-Event-ID", cursors[15]}});
    await_hello(session);
    auto got = collect_data_events(session, 4, 5s);
    INFO("ended " << to_string(got.ended));
    CHECK(seqs_of(got.events) == std::vector<std::uint64_t>{17, 18, 19, 20});
  }

  SECTION("history with a too-old since is 410") {
    auto r = client::request(ep, "GET", events_target("docs") + "?since=" + client::url_encode(cursors[1]));
    INFO("reply " << r.body);
    CHECK(r.status == 410);
    auto body = parse_body(r);
    CHECK(body["error"].is_string());
    CHECK(body["reason"] == "cursor_too_old");
    CHECK(body["head"] == head);
  }

  SECTION("history with another epoch is 410 epoch_changed") {
    const auto epoch = cursor_of(head).epoch;
    auto r = client::request(
        ep, "GET",
        events_target("docs") + "?since=" + client::url_encode(with_epoch(cursors[17], epoch ^ 1)));
    INFO("reply " << r.body);
    CHECK(r.status == 410);
    auto body = parse_body(r);
    CHECK(body["error"].is_string());
    CHECK(body["reason"] == "epoch_changed");
    CHECK(body["head"] == head);
  }
}
