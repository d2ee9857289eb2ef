// The feed server (cluster/feed_server.hpp) on CAF's test coordinator, with
// this node's real hubs and store: it serves other members' publishes and
// pages only for the streams this node owns, answers garbage with an error
// rather than a default, and keeps a relay's live feed until the relay lets
// go or goes away.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/feed_server.hpp"
#include "cluster/wire.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/member_view.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;
using tidings::testing::stream_placed_on;

void run_in(caf::event_based_actor* self, const std::function<void(caf::event_based_actor*)>& body) {
  body(self);
}

// A relay on another member: it keeps the pages its feed sends.
caf::behavior fake_relay(caf::event_based_actor*,
                         const std::shared_ptr<std::vector<proto::FeedPage>>& pages) {
  return {
      [pages](page_atom, const std::string& bytes) {
        proto::FeedPage page;
        REQUIRE(parse(bytes, &page));
        pages->push_back(page);
      },
  };
}

std::string publish_of(const std::string& stream, const std::string& key) {
  proto::PublishRequest p;
  p.set_tenant("t1");
  p.set_stream(stream);
  p.set_idempotency_key(key);
  auto* e = p.add_events();
  e->set_path("/docs/1");
  e->set_type("MODIFIED");
  e->set_data_json("{}");
  return p.SerializeAsString();
}

std::string fetch_of(const std::string& stream) {
  proto::FetchRequest p;
  p.set_tenant("t1");
  p.set_stream(stream);
  p.set_max_frames(10);
  p.set_max_bytes(1 << 16);
  return p.SerializeAsString();
}

struct fixture : tidings::testing::coordinated_system {
  tidings::testing::member_view b{*sys, "b"};
  feed_server_actor server;
  const std::string own = stream_placed_on("b");
  const std::string elsewhere = stream_placed_on("a");

  fixture() {
    b.set_members();
    server = sys->spawn(feed_server, feed_server_config{&*b.hubs, &*b.view});
    sched->run();
  }

  ~fixture() {
    caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
    for (const auto& hub : b.hubs->all()) caf::anon_send_exit(hub, caf::exit_reason::user_shutdown);
    sched->run();
    b.committer->stop();
  }

  template <class Atom>
  std::string ask(Atom atom, const std::string& bytes) {
    auto answer = std::make_shared<std::optional<std::string>>();
    sys->spawn(run_in, [this, atom, bytes, answer](caf::event_based_actor* self) {
      self->request(server, caf::infinite, atom, bytes).then([answer](const std::string& r) { *answer = r; });
    });
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }

  proto::PublishReply publish(const std::string& bytes) {
    proto::PublishReply r;
    REQUIRE(parse(ask(publish_atom::value, bytes), &r));
    return r;
  }

  proto::FeedPage fetch(const std::string& bytes) {
    proto::FeedPage page;
    REQUIRE(parse(ask(fetch_atom::value, bytes), &page));
    return page;
  }

  served_feeds feeds() {
    auto answer = std::make_shared<std::optional<served_feeds>>();
    sys->spawn(run_in, [this, answer](caf::event_based_actor* self) {
      self->request(server, caf::infinite, stats_atom::value).then([answer](const served_feeds& f) {
        *answer = f;
      });
    });
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }
};

}  // namespace

TEST_CASE_METHOD(fixture,
                 "a forwarded publish is stored only for a stream this node owns, and garbage is refused",
                 "[feed_server]") {
  auto stored = publish(publish_of(own, "k1"));
  CHECK(stored.outcome() == proto::PublishReply::APPENDED);
  CHECK(stored.seqs_size() == 1);
  auto again = publish(publish_of(own, "k1"));
  CHECK(again.outcome() == proto::PublishReply::REPLAYED);
  CHECK(again.seqs(0) == stored.seqs(0));

  auto moving = publish(publish_of(elsewhere, "k2"));
  CHECK(moving.outcome() == proto::PublishReply::UNAVAILABLE);
  CHECK_THAT(moving.error(), Catch::Contains("same Idempotency-Key"));

  auto garbage = publish("\xff\xff not a publish");
  CHECK(garbage.outcome() == proto::PublishReply::UNAVAILABLE);
  CHECK_THAT(garbage.error(), Catch::Contains("unreadable"));
}

TEST_CASE_METHOD(fixture, "a relay's page comes from this node's hub, and only for a stream it owns",
                 "[feed_server]") {
  REQUIRE(publish(publish_of(own, "k1")).outcome() == proto::PublishReply::APPENDED);
  auto head = fetch(fetch_of(own));
  CHECK(head.status() != proto::FeedPage::RESYNC);
  CHECK(head.head_seq() == 1);

  auto not_here = fetch(fetch_of(elsewhere));
  CHECK(not_here.status() == proto::FeedPage::RESYNC);
  CHECK(not_here.reason() == "not_owner");
  CHECK(fetch("\xff\xff").reason() == "bad_request");
}

TEST_CASE_METHOD(fixture, "a relay's live feed runs until the relay lets go or goes away", "[feed_server]") {
  auto pages = std::make_shared<std::vector<proto::FeedPage>>();
  auto relay = sys->spawn(fake_relay, pages);
  caf::anon_send(server, open_atom::value, relay, std::string("a"), fetch_of(own));
  run_until([pages] { return !pages->empty(); });
  CHECK(pages->front().status() == proto::FeedPage::CAUGHT_UP);
  CHECK(feeds() == served_feeds{{{"t1", own}, {"a"}}});

  REQUIRE(publish(publish_of(own, "k1")).outcome() == proto::PublishReply::APPENDED);
  run_until([pages] { return pages->back().status() == proto::FeedPage::LIVE; });
  CHECK(pages->back().frames_size() == 1);

  caf::anon_send(server, close_atom::value, relay);
  sched->run();
  CHECK(feeds().empty());

  // Opened again, then the relay is gone: its feed ends with it.
  caf::anon_send(server, open_atom::value, relay, std::string("a"), fetch_of(own));
  sched->run();
  CHECK(feeds().size() == 1);
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  sched->run();
  CHECK(feeds().empty());

  // A stream owned elsewhere: the relay is told it moved, and nothing is served.
  auto other = sys->spawn(fake_relay, pages);
  const auto before = pages->size();
  caf::anon_send(server, open_atom::value, other, std::string("a"), fetch_of(elsewhere));
  run_until([pages, before] { return pages->size() > before; });
  CHECK(pages->back().status() == proto::FeedPage::RESYNC);
  CHECK(pages->back().reason() == "moved");
  CHECK(feeds().empty());
  caf::anon_send_exit(other, caf::exit_reason::user_shutdown);
}
