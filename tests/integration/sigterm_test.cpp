// SIGTERM drains: every open session is told `closing` before the node exits 0.

#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;

}  // namespace

TEST_CASE("SIGTERM sends closing to every session and exits 0", "[sigterm]") {
  temp_dir dir;
  tidingsd_process node(dir.path(), {"--drain-ms", "2000"});
  auto ep = node.endpoint();
  auto cursor = publish(ep, "docs", event_json("/a", "ADDED", 1));

  std::vector<std::unique_ptr<client::sse_stream>> sessions;
  sessions.push_back(std::make_unique<client::sse_stream>(ep, sse_target({"docs"})));
  sessions.push_back(std::make_unique<client::sse_stream>(ep, sse_target({"docs", "other"})));
  sessions.push_back(std::make_unique<client::sse_stream>(ep, sse_target({"docs:/a"})));
  for (auto& s : sessions) await_hello(*s);

  // Sessions are read while the node drains, as real clients would be.
  auto exit_status = std::async(std::launch::async, [&] { return node.terminate(10s); });
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    INFO("session " << i);
    auto m = next_non_heartbeat(*sessions[i], 10s);
    REQUIRE(m);
    INFO("got event '" << m->event << "': " << m->data);
    CHECK(m->event == "closing");
    CHECK(message_json(*m)["reason"] == "shutdown");
    core::sse_message extra;
    CHECK(sessions[i]->next(extra, 5s) == client::sse_stream::result::closed);
  }
  CHECK(exit_status.get() == 0);
}
