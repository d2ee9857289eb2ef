// kill -9 right after the last acknowledgement: every acknowledged event is
// still there after a restart on the same data, under the same epoch.

#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
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

constexpr int publisher_count = 4;
constexpr int events_per_publisher = 125;
constexpr std::uint64_t total_events = publisher_count * events_per_publisher;

}  // namespace

TEST_CASE("acknowledged events survive kill -9 and resume without resync or duplicates", "[restart]") {
  temp_dir dir;
  std::vector<std::string> acked;
  {
    tidingsd_process node(dir.path());  // durability: sync, the default
    auto ep = node.endpoint();
    // A burst from several connections, so acknowledgements come out of group commits.
    std::mutex mutex;
    std::vector<std::string> errors;
    std::vector<std::thread> publishers;
    for (int p = 0; p < publisher_count; ++p) {
      publishers.emplace_back([&, p] {
        try {
          client::http_connection conn(ep);
          for (int i = 0; i < events_per_publisher; ++i) {
            auto c = publish(conn, "docs", event_json("/p" + std::to_string(p), "ADDED", i));
            std::lock_guard lock(mutex);
            acked.push_back(c);
          }
        } catch (const std::exception& e) {
          std::lock_guard lock(mutex);
          errors.push_back(e.what());
        }
      });
    }
    for (auto& t : publishers) t.join();
    node.kill9();  // no chance to flush anything not already durable
    for (const auto& e : errors) FAIL_CHECK(e);
    REQUIRE(errors.empty());
  }
  REQUIRE(acked.size() == total_events);
  std::sort(acked.begin(), acked.end(),
            [](const std::string& l, const std::string& r) { return cursor_of(l).seq < cursor_of(r).seq; });
  const auto epoch = cursor_of(acked[0]).epoch;
  for (std::uint64_t i = 0; i < total_events; ++i) {
    REQUIRE(cursor_of(acked[i]).seq == i + 1);
    REQUIRE(cursor_of(acked[i]).epoch == epoch);
  }

  tidingsd_process node(dir.path());
  auto ep = node.endpoint();
  auto info = parse_body(client::request(ep, "GET", "/v1/streams/docs"));
  INFO("stream after restart: " << info.dump());
  CHECK(info["head"] == acked.back());

  client::sse_stream session(ep, sse_target({"docs"}), {{"Last-Event-ID", acked[2]}});
  auto hello = await_hello(session);
  CHECK(hello["streams"]["docs"] == acked.back());
  auto got = collect_data_events(session, total_events - 3, 10s);
  INFO("ended " << to_string(got.ended)
                << (got.control ? " with " + got.control->event + " " + got.control->data : std::string()));
  REQUIRE(got.events.size() == total_events - 3);
  std::size_t mismatched = 0;
  for (std::size_t i = 0; i < got.events.size(); ++i)
    if (got.events[i].cursor != acked[i + 3]) ++mismatched;
  CHECK(mismatched == 0);

  auto next = publish(ep, "docs", event_json("/after", "ADDED", "restart"));
  CHECK(cursor_of(next).epoch == epoch);
  CHECK(cursor_of(next).seq == total_events + 1);
  // The live event follows the replay directly: no duplicate of anything replayed.
  auto live = collect_data_events(session, 1, 5s);
  REQUIRE(live.events.size() == 1);
  CHECK(live.events[0].cursor == next);
}
