// A session that stops reading overflows its bounded queue and is cut off with
// `resync` slow_consumer; the publisher and the other sessions never notice.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/raw_sse_session.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

constexpr std::size_t event_count = 3000;
constexpr std::size_t batch_size = 10;

}  // namespace

TEST_CASE("a stalled session gets resync slow_consumer while publisher and fast session go on",
          "[slow-consumer]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--queue-frames", "64", "--queue-bytes", "65536", "--io-threads", "2"});
  auto ep = node.endpoint();
  auto first = publish(ep, "bulk", event_json("/init", "ADDED", 0));

  // The stalled session reads its hello, then nothing until the publishing is over.
  raw_sse_session slow(ep, sse_target({"bulk"}), 5s);
  core::sse_message hello;
  REQUIRE(slow.next(hello, 5s) == raw_sse_session::result::message);
  REQUIRE(hello.event == "hello");

  client::sse_stream fast(ep, sse_target({"bulk"}));
  await_hello(fast);
  collected fast_seen;
  std::string fast_error;
  std::thread fast_reader([&] {
    try {
      fast_seen = collect_data_events(fast, event_count, 60s);
    } catch (const std::exception& e) {
      fast_error = e.what();
    }
  });

  const std::string padding(1000, 'x');
  std::vector<std::string> acked;
  auto slowest_publish = std::chrono::steady_clock::duration::zero();
  std::string publish_error;
  try {
    client::http_connection conn(ep);
    for (std::size_t i = 0; i < event_count; i += batch_size) {
      std::string array = "[";
      for (std::size_t k = 0; k < batch_size; ++k) {
        if (k) array += ",";
        array += event_json("/bulk", "ADDED", {{"i", i + k}, {"pad", padding}});
      }
      array += "]";
      auto start = std::chrono::steady_clock::now();
      auto cursors = publish_batch(conn, "bulk", array);
      slowest_publish = std::max(slowest_publish, std::chrono::steady_clock::now() - start);
      acked.insert(acked.end(), cursors.begin(), cursors.end());
    }
  } catch (const std::exception& e) {
    publish_error = e.what();
  }
  fast_reader.join();

  CHECK(publish_error.empty());
  INFO("publish error: " << publish_error);
  REQUIRE(acked.size() == event_count);
  // Nothing in the write path waits for the stalled session.
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(slowest_publish).count() < 3000);

  INFO("fast session: " << fast_error << " ended " << to_string(fast_seen.ended)
                        << (fast_seen.control
                                ? " with " + fast_seen.control->event + " " + fast_seen.control->data
                                : std::string()));
  REQUIRE(fast_seen.events.size() == event_count);
  std::size_t fast_mismatch = 0;
  for (std::size_t i = 0; i < event_count; ++i)
    if (fast_seen.events[i].cursor != acked[i] || fast_seen.events[i].data["i"] != i) ++fast_mismatch;
  CHECK(fast_mismatch == 0);

  // Now the stalled session reads: a prefix of the events, then the resync, then the end.
  auto slow_seen = collect_data_events(slow, event_count, 10s);
  INFO("slow session got " << slow_seen.events.size() << " events, ended " << to_string(slow_seen.ended));
  REQUIRE(slow_seen.ended == collected::end::control);
  CHECK(slow_seen.events.size() < event_count);
  for (std::size_t i = 0; i < slow_seen.events.size(); ++i) REQUIRE(slow_seen.events[i].cursor == acked[i]);
  INFO("control: " << slow_seen.control->event << " " << slow_seen.control->data);
  CHECK(slow_seen.control->event == "resync");
  auto resync = message_json(*slow_seen.control);
  CHECK(resync["stream"] == "bulk");
  CHECK(resync["reason"] == "slow_consumer");
  CHECK(resync["head"].is_string());
  // The resume point is the last event this session actually got.
  const auto last_delivered = slow_seen.events.empty() ? first : slow_seen.events.back().id;
  CHECK(resync["cursor"] == last_delivered);
  core::sse_message after;
  CHECK(slow.next(after, 5s) == raw_sse_session::result::closed);

  // The fast session was not cut off too.
  core::sse_message extra;
  CHECK(fast.next(extra, 300ms) == client::sse_stream::result::timeout);
}
