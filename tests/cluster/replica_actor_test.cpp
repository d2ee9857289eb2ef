// A follower's replica actor (cluster/replica_actor.hpp) on CAF's test
// coordinator, with a real store and group committer: it answers an
// append from the stream's owner once the append is durable, takes a
// write sent again once, says where its copy ends when an append leaves a
// gap, refuses a member it does not see as the owner, and fences an older
// term.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/replica_actor.hpp"
#include "core/placement.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/member_view.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;

// Sends one append and keeps the answer. (Spawned with arguments: CAF 0.17
// spawning a function without any binds a null argument tuple.)
void ask(caf::event_based_actor* self, const replica_actor& copy, const replica_append_ptr& append,
         const std::shared_ptr<std::optional<proto::ReplicaReply>>& answer) {
  self->request(copy, caf::infinite, replicate_atom::value, append).then([answer](const std::string& bytes) {
    answer->emplace();
    REQUIRE((*answer)->ParseFromString(bytes));
  });
}

// The stream's owner "a" (or another member) appends.
replica_append_ptr append_of(const std::string& owner, std::uint64_t term, std::uint64_t prev_seq,
                             std::vector<std::uint64_t> seqs) {
  return tidings::testing::append_of({"t1", tidings::testing::stream_placed_on("a")}, owner, term, prev_seq,
                                     std::move(seqs));
}

struct fixture : tidings::testing::coordinated_system {
  tidings::testing::member_view b{*sys, "b"};
  persistence::store& store = *b.store;
  actors::stream_key key{"t1", tidings::testing::stream_placed_on("a")};
  replica_actor copy;

  fixture() {
    b.set_members();
    replica_config cfg;
    cfg.stream = key;
    cfg.self_id = "b";
    cfg.store = b.store.get();
    cfg.committer = &*b.committer;
    cfg.view = &*b.view;
    copy = sys->spawn(replica, std::move(cfg));
    sched->run();
  }

  ~fixture() {
    caf::anon_send_exit(copy, caf::exit_reason::user_shutdown);
    sched->run();
    b.committer->stop();
  }

  // The replica's answer; its write completes on the committer's thread,
  // whose message the coordinator runs once it has arrived.
  proto::ReplicaReply send(const replica_append_ptr& append) {
    auto answer = std::make_shared<std::optional<proto::ReplicaReply>>();
    sys->spawn(ask, copy, append, answer);
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }

  std::vector<std::uint64_t> stored_seqs() {
    std::optional<persistence::stream_meta> meta;
    REQUIRE(store.get_stream(key.tenant, key.name, &meta).ok());
    if (!meta) return {};
    std::vector<persistence::stored_event> events;
    REQUIRE(store.read_events(meta->id, 0, meta->head_seq, 100, &events).ok());
    return tidings::testing::seqs_of(events);
  }
};

}  // namespace

TEST_CASE_METHOD(fixture,
                 "a follower's copy answers the owner's appends once durable, takes a write sent again "
                 "once, and answers a gap with where it ends",
                 "[replica]") {
  auto first = send(append_of("a", 1, 0, {1, 2}));
  CHECK(first.status() == proto::ReplicaReply::OK);
  CHECK(first.epoch() == 1);
  CHECK(first.head() == 2);
  CHECK(stored_seqs() == std::vector<std::uint64_t>{1, 2});

  // 2 again with 3: 2 is held already, 3 is new.
  auto again = send(append_of("a", 1, 1, {2, 3}));
  CHECK(again.status() == proto::ReplicaReply::OK);
  CHECK(again.head() == 3);
  CHECK(stored_seqs() == std::vector<std::uint64_t>{1, 2, 3});

  // Starts after 5: the copy ends at 3.
  auto gap = send(append_of("a", 1, 5, {6}));
  CHECK(gap.status() == proto::ReplicaReply::GAP);
  CHECK(gap.head() == 3);
  CHECK(stored_seqs() == std::vector<std::uint64_t>{1, 2, 3});
}

TEST_CASE_METHOD(fixture,
                 "a follower's copy refuses a member it does not see as the stream's owner, and fences "
                 "an owner's older term",
                 "[replica]") {
  auto stranger = send(append_of("c", 1, 0, {1}));
  CHECK(stranger.status() == proto::ReplicaReply::REFUSED);
  CHECK_THAT(stranger.error(), Catch::Contains("a as the stream's owner"));
  CHECK(stored_seqs().empty());

  REQUIRE(send(append_of("a", 3, 0, {1})).status() == proto::ReplicaReply::OK);
  auto stale = send(append_of("a", 2, 1, {2}));
  CHECK(stale.status() == proto::ReplicaReply::FENCED);
  CHECK(stale.term() == 3);
  CHECK(stale.term_owner() == "a");
  CHECK(stored_seqs() == std::vector<std::uint64_t>{1});
}
