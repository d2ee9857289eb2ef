// Many publishers on one stream: the hub must hand out one contiguous,
// duplicate-free sequence, and every watcher must see that same sequence.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

constexpr int publisher_count = 8;
constexpr int events_per_publisher = 1000;
constexpr std::size_t total_events = publisher_count * events_per_publisher;
constexpr int session_count = 3;

// (publisher, index within that publisher) identifies an event independently of its cursor.
using origin = std::pair<int, int>;

// Publishes events_per_publisher events on one keep-alive connection,
// alternating single events and arrays of up to 4, and returns their cursors
// in publish order.
std::vector<std::string> run_publisher(const client::endpoint& ep, int publisher) {
  client::http_connection conn(ep);
  std::vector<std::string> cursors;
  int next = 0;
  for (int round = 0; next < events_per_publisher; ++round) {
    if (round % 2 == 0) {
      cursors.push_back(
          publish(conn, "load",
                  event_json("/p" + std::to_string(publisher), "ADDED", {{"p", publisher}, {"i", next}})));
      ++next;
      continue;
    }
    int n = std::min(1 + round % 4, events_per_publisher - next);
    std::string array = "[";
    for (int k = 0; k < n; ++k) {
      if (k) array += ",";
      array += event_json("/p" + std::to_string(publisher), "ADDED", {{"p", publisher}, {"i", next + k}});
    }
    array += "]";
    auto got = publish_batch(conn, "load", array);
    if (got.size() != static_cast<std::size_t>(n))
      throw std::runtime_error("batch of " + std::to_string(n) + " got " + std::to_string(got.size()) +
                               " cursors");
    cursors.insert(cursors.end(), got.begin(), got.end());
    next += n;
  }
  return cursors;
}

}  // namespace

TEST_CASE("8 concurrent publishers get contiguous seqs that 3 sessions see in one order", "[concurrent]") {
  temp_dir dir;
  // Two I/O shards, so sessions and publishers are spread over both threads.
  tidingsd_process node(dir.path(), {"--io-threads", "2"});
  auto ep = node.endpoint();

  std::vector<std::unique_ptr<client::sse_stream>> sessions;
  for (int s = 0; s < session_count; ++s) {
    sessions.push_back(std::make_unique<client::sse_stream>(ep, sse_target({"load"})));
    await_hello(*sessions.back());
  }

  // Sessions are read while the publishers run, as real watchers would be.
  std::vector<collected> seen(session_count);
  std::vector<std::thread> readers;
  for (int s = 0; s < session_count; ++s) {
    readers.emplace_back([&, s] {
      try {
        seen[s] = collect_data_events(*sessions[s], total_events, 90s);
      } catch (const std::exception& e) {
        seen[s].ended = collected::end::closed;
        seen[s].control = core::sse_message{"reader-exception", e.what(), std::nullopt};
      }
    });
  }

  std::vector<std::vector<std::string>> acked(publisher_count);
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> publishers;
  for (int p = 0; p < publisher_count; ++p) {
    publishers.emplace_back([&, p] {
      try {
        acked[p] = run_publisher(ep, p);
      } catch (const std::exception& e) {
        std::lock_guard lock(errors_mutex);
        errors.push_back("publisher " + std::to_string(p) + ": " + e.what());
      }
    });
  }
  for (auto& t : publishers) t.join();
  for (auto& t : readers) t.join();
  for (const auto& e : errors) FAIL_CHECK(e);
  REQUIRE(errors.empty());

  // Acknowledgements: one epoch, seqs exactly 1..8000, each publisher's in its own order.
  std::map<origin, std::string> cursor_of_origin;
  std::vector<std::uint64_t> all_seqs;
  const auto epoch = cursor_of(acked[0].at(0)).epoch;
  bool one_epoch = true;
  bool publisher_order = true;
  for (int p = 0; p < publisher_count; ++p) {
    REQUIRE(acked[p].size() == static_cast<std::size_t>(events_per_publisher));
    std::uint64_t previous = 0;
    for (int i = 0; i < events_per_publisher; ++i) {
      auto c = cursor_of(acked[p][i]);
      one_epoch = one_epoch && c.epoch == epoch;
      publisher_order = publisher_order && c.seq > previous;
      previous = c.seq;
      all_seqs.push_back(c.seq);
      cursor_of_origin[{p, i}] = acked[p][i];
    }
  }
  CHECK(one_epoch);
  CHECK(publisher_order);
  std::sort(all_seqs.begin(), all_seqs.end());
  std::vector<std::uint64_t> expected_seqs(total_events);
  for (std::size_t i = 0; i < total_events; ++i) expected_seqs[i] = i + 1;
  CHECK(all_seqs == expected_seqs);  // contiguous and no duplicates

  // Every session: all 8000, in seq order, each carrying the cursor its publisher was given.
  for (int s = 0; s < session_count; ++s) {
    INFO("session " << s << " ended " << to_string(seen[s].ended)
                    << (seen[s].control ? " with " + seen[s].control->event + " " + seen[s].control->data
                                        : std::string()));
    REQUIRE(seen[s].events.size() == total_events);
    CHECK(seqs_of(seen[s].events) == expected_seqs);
    std::size_t mismatched = 0;
    for (const auto& e : seen[s].events) {
      origin o{e.data["p"].get<int>(), e.data["i"].get<int>()};
      if (cursor_of_origin[o] != e.cursor || e.id != e.cursor || e.path != "/p" + std::to_string(o.first))
        ++mismatched;
    }
    CHECK(mismatched == 0);
  }
  for (int s = 1; s < session_count; ++s) {
    bool same = true;
    for (std::size_t i = 0; i < total_events && same; ++i)
      same = seen[s].events[i].cursor == seen[0].events[i].cursor;
    CHECK(same);
  }

  // History agrees with what was delivered.
  auto history = read_history(ep, "load");
  REQUIRE(history.size() == total_events);
  std::size_t history_mismatch = 0;
  for (std::size_t i = 0; i < total_events; ++i) {
    if (history[i]["cursor"] != seen[0].events[i].cursor || history[i]["data"] != seen[0].events[i].data)
      ++history_mismatch;
  }
  CHECK(history_mismatch == 0);
}
