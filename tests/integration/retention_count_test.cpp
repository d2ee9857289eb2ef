// Count retention: a stream keeps exactly --retention-events events for its
// readers, while the store deletes trimmed events in chunks (a quarter of
// the retention, at least 64; core::physical_trim_due). Trimmed events that
// still wait for their delete must never be served, before or after a
// restart.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

// The whole retained history is exactly cursors [first, end) of `cursors`.
void check_retained(const client::endpoint& ep, const std::vector<std::string>& cursors, std::size_t first) {
  auto info = parse_body(client::request(ep, "GET", "/v1/streams/docs"));
  INFO("stream info: " << info.dump());
  CHECK(info["first"] == cursors[first]);
  CHECK(info["head"] == cursors.back());
  CHECK(info["events"] == cursors.size() - first);

  auto all = read_history(ep, "docs");
  REQUIRE(all.size() == cursors.size() - first);
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i]["cursor"] == cursors[first + i]);
  // From just before the first retained: the same; from before that: gone.
  CHECK(read_history(ep, "docs", cursors[first - 1]).size() == all.size());
  auto old =
      client::request(ep, "GET", "/v1/streams/docs/events?since=" + client::url_encode(cursors[first - 2]));
  INFO("history from a trimmed cursor: " << old.body);
  CHECK(old.status == 410);
}

}  // namespace

TEST_CASE("count retention serves exactly the retained events while trimmed ones await their delete",
          "[retention]") {
  temp_dir dir;
  std::vector<std::string> cursors;
  {
    tidingsd_process node(dir.path(), {"--retention-events", "5"});
    auto ep = node.endpoint();
    client::http_connection conn(ep);
    // 100 events: the first chunk (below 66) is deleted, 66..95 are trimmed
    // but still stored.
    for (int i = 1; i <= 100; ++i) cursors.push_back(publish(conn, "docs", event_json("/e", "ADDED", i)));
    check_retained(ep, cursors, 95);
    REQUIRE(node.terminate() == 0);
  }
  // A restart knows nothing of what was deleted: its next publish deletes
  // everything trimmed, and reads before and after are the same.
  tidingsd_process node(dir.path(), {"--retention-events", "5"});
  auto ep = node.endpoint();
  check_retained(ep, cursors, 95);
  cursors.push_back(publish(ep, "docs", event_json("/e", "ADDED", 101)));
  check_retained(ep, cursors, 96);
}
