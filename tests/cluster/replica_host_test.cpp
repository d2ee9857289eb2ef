// The replica host (cluster/replica_host.hpp) on CAF's test coordinator,
// with a real store and group committer: it runs one follower per stream an
// owner appends to, refuses streams this node owns, tells what a copy is
// when it stops, refuses appends while a copy is being dropped or
// forgotten, and drops a copy only at the epoch it was asked to.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/replica_host.hpp"
#include "core/placement.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/member_view.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;

using tidings::testing::stream_placed_on;

replica_append_ptr append_of(const std::string& stream, std::uint64_t prev_seq,
                             std::vector<std::uint64_t> seqs) {
  return tidings::testing::append_of({"t1", stream}, "a", 1, prev_seq, std::move(seqs));
}

// Runs `body` inside an actor of the coordinated system. (Spawned with an
// argument: CAF 0.17 spawning a function without any binds a null argument
// tuple.)
void run_in(caf::event_based_actor* self, const std::function<void(caf::event_based_actor*)>& body) {
  body(self);
}

struct fixture : tidings::testing::coordinated_system {
  tidings::testing::member_view b{*sys, "b"};
  replica_host_actor host;
  const std::string followed = stream_placed_on("a");
  const std::string other_followed = stream_placed_on("a", 1);

  fixture() {
    b.set_members();
    host = sys->spawn(replica_host, replica_host_config{"b", &*b.hubs, b.store.get(), &*b.committer, &*b.view,
                                                        std::chrono::milliseconds(5000)});
    sched->run();
  }

  ~fixture() {
    caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
    sched->run();
    b.committer->stop();
  }

  // Sends `before` (if any) and then the append from one actor, so both are
  // in the host's mailbox, in that order, before it runs.
  proto::ReplicaReply append(const replica_append_ptr& a,
                             const std::function<void(caf::event_based_actor*)>& before = {}) {
    auto answer = std::make_shared<std::optional<proto::ReplicaReply>>();
    sys->spawn(run_in, [this, a, answer, before](caf::event_based_actor* self) {
      if (before) before(self);
      self->request(host, caf::infinite, replicate_atom::value, a).then([answer](const std::string& bytes) {
        answer->emplace();
        REQUIRE((*answer)->ParseFromString(bytes));
      });
    });
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }

  // `before` as for append().
  copy_status stop(const std::string& stream,
                   const std::function<void(caf::event_based_actor*)>& before = {}) {
    auto answer = std::make_shared<std::optional<copy_status>>();
    sys->spawn(run_in, [this, stream, answer, before](caf::event_based_actor* self) {
      if (before) before(self);
      self->request(host, caf::infinite, stop_atom::value, std::string("t1"), stream)
          .then([answer](const copy_status& c) { *answer = c; });
    });
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }

  bool release(const std::string& stream) {
    auto answer = std::make_shared<std::optional<bool>>();
    sys->spawn(run_in, [this, stream, answer](caf::event_based_actor* self) {
      self->request(host, caf::infinite, release_atom::value, std::string("t1"), stream)
          .then([answer](bool released) { *answer = released; });
    });
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }

  std::optional<persistence::stream_meta> stored(const std::string& stream) {
    std::optional<persistence::stream_meta> meta;
    REQUIRE(b.store->get_stream("t1", stream, &meta).ok());
    return meta;
  }
};

}  // namespace

TEST_CASE_METHOD(fixture,
                 "the replica host takes appends for the streams it follows and refuses one this node owns",
                 "[replica_host]") {
  CHECK(append(append_of(followed, 0, {1, 2})).status() == proto::ReplicaReply::OK);
  CHECK(append(append_of(other_followed, 0, {1})).status() == proto::ReplicaReply::OK);
  CHECK(append(append_of(followed, 2, {3})).head() == 3);
  REQUIRE(stored(followed));
  CHECK(stored(followed)->head_seq == 3);
  CHECK(stored(other_followed)->head_seq == 1);

  const auto own = stream_placed_on("b");
  auto refused = append(append_of(own, 0, {1}));
  CHECK(refused.status() == proto::ReplicaReply::REFUSED);
  CHECK_THAT(refused.error(), Catch::Contains("sees itself as the stream's owner"));
  CHECK_FALSE(stored(own));
}

TEST_CASE_METHOD(
    fixture,
    "a stopped follower tells what its copy is, and with none running the store's copy is never in "
    "sync",
    "[replica_host]") {
  REQUIRE(append(append_of(followed, 0, {1, 2})).status() == proto::ReplicaReply::OK);
  auto running = stop(followed);
  CHECK(running.exists);
  CHECK(running.in_sync);
  CHECK(running.owner == "a");
  CHECK(running.epoch == 1);
  CHECK(running.head == 2);

  auto from_store = stop(followed);
  CHECK(from_store.exists);
  CHECK_FALSE(from_store.in_sync);
  CHECK(from_store.owner == "a");
  CHECK(from_store.head == 2);

  CHECK_FALSE(stop(other_followed).exists);
}

TEST_CASE_METHOD(fixture, "a released copy is deleted durably, and a new append starts a copy again",
                 "[replica_host]") {
  REQUIRE(append(append_of(followed, 0, {1, 2})).status() == proto::ReplicaReply::OK);
  CHECK(release(followed));
  CHECK_FALSE(stored(followed));
  CHECK(append(append_of(followed, 0, {1})).status() == proto::ReplicaReply::OK);
  CHECK(stored(followed)->head_seq == 1);
}

TEST_CASE_METHOD(
    fixture,
    "a copy is dropped only at the epoch asked and with no follower running, and refuses appends "
    "until it is gone",
    "[replica_host]") {
  // Each drop goes out just ahead of an append, which a drop under way
  // would refuse.
  auto drop_at = [this](std::uint64_t epoch) {
    return [this, epoch, stream = followed](caf::event_based_actor* self) {
      self->send(host, drop_atom::value, std::string("t1"), stream, epoch);
    };
  };
  REQUIRE(append(append_of(followed, 0, {1, 2})).status() == proto::ReplicaReply::OK);
  // A follower runs: the drop waits for a stop or release instead.
  auto running = append(append_of(followed, 2, {3}), drop_at(1));
  CHECK(running.status() == proto::ReplicaReply::OK);
  CHECK(running.head() == 3);

  REQUIRE(stop(followed).exists);
  auto other_epoch = append(append_of(followed, 3, {4}), drop_at(2));
  CHECK(other_epoch.status() == proto::ReplicaReply::OK);
  CHECK(other_epoch.head() == 4);

  REQUIRE(stop(followed).exists);
  auto meanwhile = append(append_of(followed, 4, {5}), drop_at(1));
  CHECK(meanwhile.status() == proto::ReplicaReply::REFUSED);
  CHECK_THAT(meanwhile.error(), Catch::Contains("being dropped"));
  // A stop waits for a drop under way, so once it answers the host has
  // heard the drop finish, not only the store (the store's delete lands on
  // the committer's thread before the host hears of it).
  CHECK_FALSE(stop(followed).exists);
  CHECK_FALSE(stored(followed).has_value());
  CHECK(append(append_of(followed, 0, {1})).status() == proto::ReplicaReply::OK);
}

TEST_CASE_METHOD(fixture,
                 "a lapsed member's copies stop following and none counts as in sync, and appends wait until "
                 "they have stopped",
                 "[replica_host]") {
  REQUIRE(append(append_of(followed, 0, {1, 2})).status() == proto::ReplicaReply::OK);
  REQUIRE(append(append_of(other_followed, 0, {1})).status() == proto::ReplicaReply::OK);
  auto meanwhile = append(append_of(followed, 2, {3}),
                          [this](caf::event_based_actor* self) { self->send(host, forget_atom::value); });
  CHECK(meanwhile.status() == proto::ReplicaReply::REFUSED);
  CHECK_THAT(meanwhile.error(), Catch::Contains("being stopped"));
  sched->run();

  for (const auto& stream : {followed, other_followed}) {
    auto copy = stop(stream);
    CHECK(copy.exists);
    CHECK_FALSE(copy.in_sync);
  }
  CHECK(stored(followed)->head_seq == 2);
}

TEST_CASE_METHOD(
    fixture,
    "a stop waits for what a forgotten follower still writes, and for a copy being dropped to be "
    "gone",
    "[replica_host]") {
  REQUIRE(append(append_of(followed, 0, {1, 2})).status() == proto::ReplicaReply::OK);
  // The append, the lapse and the stop reach the host in this order; the
  // follower has not even begun the append's write when the stop comes.
  auto lapsed = stop(followed, [this, a = append_of(followed, 2, {3})](caf::event_based_actor* self) {
    self->request(host, caf::infinite, replicate_atom::value, a).then([](const std::string&) {});
    self->send(host, forget_atom::value);
  });
  CHECK(lapsed.exists);
  CHECK(lapsed.head == 3);
  CHECK_FALSE(lapsed.in_sync);

  REQUIRE(append(append_of(other_followed, 0, {1})).status() == proto::ReplicaReply::OK);
  auto dropped = stop(other_followed, [this, stream = other_followed](caf::event_based_actor* self) {
    self->request(host, caf::infinite, release_atom::value, std::string("t1"), stream).then([](bool) {});
  });
  CHECK_FALSE(dropped.exists);
  CHECK_FALSE(stored(other_followed));
}
