// A watch's debounce on CAF's test coordinator: its notices go to a stand-in
// for the notice stream's hub that answers as the test says, so a refusal
// (a failover, too few in-sync replicas) and an uncertain write can be
// played at a chosen moment.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/watch_debounce.hpp"

namespace {

using namespace tidings;
using namespace tidings::actors;

// What the stand-in hub received, oldest first; each waits for the test's
// answer.
struct hub_inbox {
  std::vector<publish_request_ptr> got;
};

// Only the publish a debounce sends; the rest of a stream's interface is
// never used by it.
caf::behavior fake_hub(caf::event_based_actor*, const std::shared_ptr<hub_inbox>& inbox) {
  return {[inbox](publish_atom, const publish_request_ptr& req) { inbox->got.push_back(req); }};
}

std::string text_of(const publish_request& req) {
  REQUIRE(req.events.size() == 1);
  return req.events[0].data_json;
}

struct fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  std::shared_ptr<hub_inbox> inbox = std::make_shared<hub_inbox>();
  watch_stats_ptr stats = std::make_shared<watch_stats>();
  watch_debounce_actor debounce;
  std::uint64_t seq = 0;
  // Positions stored without a notice, each with its answer still to give.
  std::vector<std::pair<persistence::write_set, persistence::group_committer::callback>> saves;

  fixture() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    watch_debounce_config c;
    c.id = {"acme", "w"};
    c.uri = "stream://orders";
    c.stream = "orders";
    c.policy.quiet = std::chrono::milliseconds(0);  // every line is due at once
    c.policy.max_wait = std::chrono::milliseconds(0);
    c.notices = [hub = caf::actor_cast<stream_actor>(sys->spawn(fake_hub, inbox))] { return hub; };
    c.stats = stats;
    c.save = [this](persistence::write_set ws, persistence::group_committer::callback done) {
      saves.emplace_back(std::move(ws), std::move(done));
    };
    debounce = sys->spawn(watch_debounce, std::move(c));
    sched->run();
  }
  ~fixture() {
    caf::anon_send_exit(debounce, caf::exit_reason::user_shutdown);
    sched->run();
  }

  // The filter's output: one line (none: its lines were filtered out), and
  // the position after it; `fail`: the watch cannot go on.
  void line(const std::string& text, const std::string& fail = {}) {
    auto out = std::make_shared<watch_output>();
    if (!text.empty()) out->lines.emplace_back(text, text);
    out->position.cursor = {1, ++seq};
    out->fail = fail;
    caf::anon_send(debounce, lines_atom::value, watch_output_ptr(std::move(out)));
    sched->run();
  }
  void flush(bool publish_pending, const std::shared_ptr<bool>& flushed) {
    caf::anon_send(debounce, flush_atom::value, publish_pending, actor_task{[flushed] { *flushed = true; }});
    sched->run();
  }
  void wait(std::chrono::milliseconds d) {
    sched->advance_time(d);
    sched->run();
  }
  void answer(std::size_t k, publish_result r) {
    inbox->got.at(k)->reply(std::move(r));
    sched->run();
  }
};

publish_result stored(std::uint64_t seq) {
  return {publish_outcome::appended, {{7, seq}}, {}};
}

}  // namespace

TEST_CASE_METHOD(fixture,
                 "a notice refused for now is sent again with its key, before any later one, until stored",
                 "[watch][debounce]") {
  line("ADDED /a");
  REQUIRE(inbox->got.size() == 1);
  const auto key = inbox->got[0]->idempotency_key;
  CHECK(!key.empty());
  CHECK(inbox->got[0]->progress.size() == 1);  // the position goes with the notice

  // A later line waits behind the unanswered notice: one at a time.
  line("ADDED /b");
  CHECK(inbox->got.size() == 1);

  answer(0, {publish_outcome::unavailable, {}, "the stream has no leader yet; retry"});
  // The listing says why notices wait.
  auto wait = stats->notices_wait.load();
  REQUIRE(wait);
  CHECK(*wait == "the stream has no leader yet; retry");
  CHECK(inbox->got.size() == 1);  // nothing before the pause

  sched->trigger_timeout();
  sched->run();
  REQUIRE(inbox->got.size() == 2);
  CHECK(inbox->got[1]->idempotency_key == key);
  CHECK(text_of(*inbox->got[1]) == text_of(*inbox->got[0]));
  CHECK(inbox->got[1]->progress.size() == 1);

  // Uncertain: it may be stored; the same key again tells.
  answer(1, {publish_outcome::uncertain, {}, "the followers did not confirm in time"});
  sched->trigger_timeout();
  sched->run();
  REQUIRE(inbox->got.size() == 3);
  CHECK(inbox->got[2]->idempotency_key == key);

  answer(2, {publish_outcome::replayed, {{7, 1}}, {}});
  CHECK(stats->notices_wait.load() == nullptr);
  CHECK(stats->notices.load() == 1);
  // Now the later notice, under a key of its own.
  REQUIRE(inbox->got.size() == 4);
  CHECK(inbox->got[3]->idempotency_key != key);
  CHECK(text_of(*inbox->got[3]).find("ADDED /b") != std::string::npos);
  answer(3, stored(2));
  CHECK(stats->notices.load() == 2);
  CHECK(inbox->got.size() == 4);
}

TEST_CASE_METHOD(fixture,
                 "the pause between tries doubles up to 2 s, and is short again once a notice is stored",
                 "[watch][debounce]") {
  using std::chrono::milliseconds;
  line("ADDED /a");
  std::size_t sent = 1;
  // Refused again and again: each try comes one pause after the refusal.
  for (auto pause : {100, 200, 400, 800, 1600, 2000, 2000}) {
    INFO("pause " << pause << " ms");
    answer(sent - 1, {publish_outcome::unavailable, {}, "1 of the 2 copies min-insync requires are in sync"});
    sched->advance_time(milliseconds(pause - 1));
    sched->run();
    CHECK(inbox->got.size() == sent);
    sched->advance_time(milliseconds(1));
    sched->run();
    REQUIRE(inbox->got.size() == ++sent);
  }
  answer(sent - 1, stored(1));
  CHECK(stats->notices_wait.load() == nullptr);

  line("ADDED /b");
  REQUIRE(inbox->got.size() == ++sent);
  answer(sent - 1, {publish_outcome::unavailable, {}, "the stream has no leader yet; retry"});
  sched->advance_time(milliseconds(100));
  sched->run();
  CHECK(inbox->got.size() == sent + 1);
}

// Keeps the reason `watched` ends with.
void on_end(const watch_debounce_actor& watched, const std::shared_ptr<std::optional<caf::error>>& ended) {
  caf::actor_cast<caf::strong_actor_ptr>(watched)->get()->attach_functor(
      [ended](const caf::error& reason) { *ended = reason; });
}

TEST_CASE_METHOD(fixture, "a notice refused for a full disk ends the watch with the reason",
                 "[watch][debounce]") {
  auto ended = std::make_shared<std::optional<caf::error>>();
  on_end(debounce, ended);
  line("ADDED /a");
  answer(0, {publish_outcome::storage_full, {}, "the disk is under its reserve"});
  REQUIRE(ended->has_value());
  CHECK(sys->render(**ended).find("the disk is under its reserve") != std::string::npos);
  wait(std::chrono::seconds(31));
  CHECK(inbox->got.size() == 1);
}

TEST_CASE_METHOD(fixture, "a watch that stops while its stream refuses drops what waits, and stops",
                 "[watch][debounce]") {
  auto ended = std::make_shared<std::optional<caf::error>>();
  on_end(debounce, ended);
  line("ADDED /a");
  answer(0, {publish_outcome::unavailable, {}, "the stream has no leader yet; retry"});
  auto flushed = std::make_shared<bool>(false);
  caf::anon_send(debounce, flush_atom::value, false, actor_task{[flushed] { *flushed = true; }});
  sched->run();
  CHECK(!*flushed);  // the notice already went: its answer is awaited
  sched->advance_time(std::chrono::milliseconds(100));
  sched->run();
  REQUIRE(inbox->got.size() == 2);
  answer(1, {publish_outcome::unavailable, {}, "the stream has no leader yet; retry"});
  CHECK(*flushed);
  CHECK(ended->has_value());
  CHECK(stats->notices_wait.load() == nullptr);
}

TEST_CASE_METHOD(fixture,
                 "a failure whose line was filtered out stores its position only after the notices before it",
                 "[watch][debounce]") {
  line("ADDED /a");
  answer(0, {publish_outcome::unavailable, {}, "the stream has no leader yet; retry"});
  line("", "the source failed");
  CHECK(saves.empty());  // not ahead of the waiting notice
  wait(std::chrono::milliseconds(100));
  REQUIRE(inbox->got.size() == 2);
  answer(1, stored(1));
  REQUIRE(saves.size() == 1);
  REQUIRE(saves[0].first.progress_puts.size() == 1);
  CHECK(saves[0].first.progress_puts[0].second.cursor == core::cursor{1, 2});
}

TEST_CASE_METHOD(fixture, "a stop tries a notice that may be stored again before it gives up on it",
                 "[watch][debounce]") {
  auto ended = std::make_shared<std::optional<caf::error>>();
  on_end(debounce, ended);
  line("ADDED /a");
  answer(0, {publish_outcome::uncertain, {}, "the followers did not confirm in time"});
  auto flushed = std::make_shared<bool>(false);
  flush(true, flushed);
  // Sent again at once, not after its pause: a stop does not wait it out.
  REQUIRE(inbox->got.size() == 2);
  CHECK(inbox->got[1]->idempotency_key == inbox->got[0]->idempotency_key);
  // Refused now, but it may be stored: tried again, not dropped.
  answer(1, {publish_outcome::unavailable, {}, "this node no longer owns the stream; retry"});
  CHECK(!*flushed);
  wait(std::chrono::milliseconds(200));
  REQUIRE(inbox->got.size() == 3);
  answer(2, {publish_outcome::replayed, {{7, 1}}, {}});
  CHECK(*flushed);
  CHECK(ended->has_value());
  CHECK(stats->notices.load() == 1);
}

TEST_CASE_METHOD(fixture, "a notice its hub never answers is sent again after 30 s, with its key",
                 "[watch][debounce]") {
  line("ADDED /a");
  wait(std::chrono::seconds(29));
  CHECK(inbox->got.size() == 1);
  wait(std::chrono::seconds(1));
  REQUIRE(inbox->got.size() == 2);
  CHECK(inbox->got[1]->idempotency_key == inbox->got[0]->idempotency_key);
  line("ADDED /b");
  CHECK(inbox->got.size() == 2);  // /b waits behind /a
  // Either try's answer settles /a (the same key: the same notice); the
  // other's is ignored.
  answer(0, stored(1));
  CHECK(stats->notices.load() == 1);
  REQUIRE(inbox->got.size() == 3);
  CHECK(text_of(*inbox->got[2]).find("ADDED /b") != std::string::npos);
  answer(1, {publish_outcome::replayed, {{7, 1}}, {}});
  CHECK(stats->notices.load() == 1);
  CHECK(inbox->got.size() == 3);
}

TEST_CASE_METHOD(fixture, "a stop waits no longer than its grace on a hub that never answers",
                 "[watch][debounce]") {
  auto ended = std::make_shared<std::optional<caf::error>>();
  on_end(debounce, ended);
  line("ADDED /a");
  auto flushed = std::make_shared<bool>(false);
  flush(false, flushed);
  wait(std::chrono::milliseconds(9999));
  CHECK(!*flushed);
  CHECK(inbox->got.size() == 1);
  wait(std::chrono::milliseconds(1));
  CHECK(*flushed);
  CHECK(ended->has_value());
  CHECK(stats->notices.load() == 0);
  CHECK(stats->notices_wait.load() == nullptr);
}

TEST_CASE_METHOD(fixture, "a notice is counted when the hub answers, before the debounce hears of it",
                 "[watch][debounce]") {
  line("ADDED /a");
  // The hub answers before it delivers the event: a reader who then sees
  // the notice must see the count include it.
  inbox->got.at(0)->reply(stored(1));
  CHECK(stats->notices.load() == 1);
  sched->run();
  CHECK(stats->notices.load() == 1);
}

TEST_CASE_METHOD(fixture,
                 "a failure whose line was filtered out while a position is being saved is saved after it",
                 "[watch][debounce]") {
  auto ended = std::make_shared<std::optional<caf::error>>();
  on_end(debounce, ended);
  line("");  // nothing to notice: the position alone is saved
  REQUIRE(saves.size() == 1);
  line("", "the source failed");
  CHECK(saves.size() == 1);  // one save at a time
  saves[0].second(persistence::status{});
  sched->run();
  REQUIRE(saves.size() == 2);
  REQUIRE(saves[1].first.progress_puts.size() == 1);
  CHECK(saves[1].first.progress_puts[0].second.cursor == core::cursor{1, 2});
  CHECK(!ended->has_value());
  saves[1].second(persistence::status{});
  sched->run();
  REQUIRE(ended->has_value());
  CHECK(sys->render(**ended).find("the source failed") != std::string::npos);
}

TEST_CASE_METHOD(fixture,
                 "while a notice is refused, later lines collapse into one notice that waits behind it",
                 "[watch][debounce]") {
  line("ADDED /a");
  answer(0, {publish_outcome::unavailable, {}, "the stream has no leader yet; retry"});
  // Refused: what comes meanwhile stays in the debounce, not one queued
  // notice per line (memory bounded by the debounce's max_lines).
  for (int i = 0; i < 50; ++i) line("MODIFIED /b");
  line("ADDED /c");
  CHECK(inbox->got.size() == 1);
  wait(std::chrono::milliseconds(100));
  REQUIRE(inbox->got.size() == 2);  // /a again
  answer(1, stored(1));
  REQUIRE(inbox->got.size() == 3);
  const auto text = text_of(*inbox->got[2]);
  CHECK(text.find("MODIFIED /b") != std::string::npos);
  CHECK(text.find("ADDED /c") != std::string::npos);
  CHECK(inbox->got[2]->progress.size() == 1);  // with the position after /c
  CHECK(inbox->got[2]->progress[0].second.cursor == core::cursor{1, 52});
  answer(2, stored(2));
  CHECK(inbox->got.size() == 3);
  CHECK(stats->notices.load() == 2);
}

TEST_CASE_METHOD(
    fixture,
    "a duplicate's stop drops what waits at once, even a notice the hub holds, and stores no position",
    "[watch][debounce]") {
  auto ended = std::make_shared<std::optional<caf::error>>();
  on_end(debounce, ended);
  line("ADDED /a");  // sent: the hub holds it, unanswered
  answer(0, {publish_outcome::uncertain, {}, "the followers did not confirm in time"});
  wait(std::chrono::milliseconds(100));
  REQUIRE(inbox->got.size() == 2);  // tried again with its key, the hub holds it
  auto flushed = std::make_shared<bool>(false);
  caf::anon_send(debounce, abandon_atom::value, actor_task{[flushed] { *flushed = true; }});
  sched->run();
  CHECK(*flushed);  // no grace: the kept copy notices from its own position
  CHECK(ended->has_value());
  CHECK(saves.empty());
  CHECK(stats->notices_wait.load() == nullptr);
  // The answer to the try the hub held reaches nobody.
  answer(1, stored(1));
  CHECK(inbox->got.size() == 2);
}
