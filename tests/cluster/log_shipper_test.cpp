// The log shipper (cluster/log_shipper.hpp) on CAF's test coordinator, with
// a follower's node actor whose answers the test sends when it chooses and
// a hub that records what it is told: a follower is probed into sync; the
// writes shipped before the shipper runs go out together as one append,
// at most eight appends are out at once and what is shipped beyond waits
// for an answer; the hub hears the log acknowledged as far as the
// follower answered.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/log_shipper.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/member_view.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;

// Member "b"'s node actor: every append it was sent, with the promise of
// its answer. Answered at once (the copy's head as the append leaves it)
// while `answer_at_once`; else held until the test answers.
struct follower_log {
  struct append {
    proto::ReplicaAppend message;
    caf::typed_response_promise<std::string> reply;
    bool answered = false;
  };
  std::vector<append> appends;
  bool answer_at_once = true;
  std::uint64_t head = 0;
};

std::string ok_reply(std::uint64_t epoch, std::uint64_t head) {
  proto::ReplicaReply r;
  r.set_status(proto::ReplicaReply::OK);
  r.set_epoch(epoch);
  r.set_head(head);
  return r.SerializeAsString();
}

// Tells the follower to answer its oldest unanswered append (promises are
// delivered from within the actor that made them).
using answer_atom = caf::atom_constant<caf::atom("answer")>;

caf::behavior follower_node(caf::event_based_actor* self, const std::shared_ptr<follower_log>& log) {
  return {
      [log](answer_atom) {
        for (auto& a : log->appends) {
          if (a.answered) continue;
          a.answered = true;
          auto head = a.message.prev_seq();
          for (const auto& e : a.message.events()) head = e.seq();
          a.reply.deliver(ok_reply(1, head));
          return;
        }
        FAIL("no append waits for an answer");
      },
      [self, log](replicate_atom, const std::string& bytes) -> caf::result<std::string> {
        follower_log::append a;
        REQUIRE(a.message.ParseFromString(bytes));
        for (const auto& e : a.message.events()) log->head = std::max(log->head, e.seq());
        if (log->answer_at_once) {
          a.answered = true;
          log->appends.push_back(std::move(a));
          return ok_reply(1, log->head);
        }
        auto rp = self->make_response_promise<std::string>();
        a.reply = rp;
        log->appends.push_back(std::move(a));
        return rp;
      },
  };
}

// The hub's side: how far it was told the followers hold the log.
struct hub_log {
  std::uint64_t replicated = 0;
  std::optional<bool> writable;
};

actors::replication_sink_actor::behavior_type fake_hub(actors::replication_sink_actor::pointer,
                                                       const std::shared_ptr<hub_log>& log) {
  return {
      [log](actors::replicated_atom, std::uint64_t seq) { log->replicated = seq; },
      [](actors::fenced_atom, const std::string&) { FAIL("fenced"); },
      [log](actors::writable_atom, bool ok, bool, const std::string&) { log->writable = ok; },
      [](actors::term_atom, std::uint64_t) {},
      [](actors::confirmed_atom, bool) {},
      [](actors::check_term_atom, std::uint64_t, const std::string&) {},
  };
}

// One event at `seq`, shipped as the hub ships a write (the log's first
// seq after it: `first_seq`).
actors::replica_batch_ptr write_of(std::uint64_t seq, std::uint64_t epoch = 1, std::uint64_t first_seq = 1) {
  auto b = std::make_shared<actors::replica_batch>();
  b->prev_seq = seq - 1;
  b->events.push_back({seq, core::event{"/o/" + std::to_string(seq), "ADDED", "{}", 0}});
  b->meta.tenant = "t1";
  b->meta.name = "orders";
  b->meta.epoch = epoch;
  b->meta.first_seq = first_seq;
  b->meta.head_seq = seq;
  b->meta.term = 1;
  return b;
}

std::vector<std::uint64_t> seqs_of(const proto::ReplicaAppend& a) {
  std::vector<std::uint64_t> out;
  for (const auto& e : a.events()) out.push_back(e.seq());
  return out;
}

struct fixture : tidings::testing::coordinated_system {
  tidings::testing::member_view a{*sys, "a"};
  std::shared_ptr<follower_log> follower = std::make_shared<follower_log>();
  std::shared_ptr<hub_log> hub = std::make_shared<hub_log>();
  caf::actor follower_actor;
  shipper_actor shipper;

  fixture() {
    follower_actor = sys->spawn(follower_node, follower);
    member peer;
    peer.id = "b";
    peer.incarnation = 7;
    a.set_members({{peer, follower_actor}});
    shipper_config cfg;
    cfg.stream = {"t1", "orders"};
    cfg.hub = sys->spawn(fake_hub, hub);
    cfg.store = a.store.get();
    cfg.view = &*a.view;
    cfg.replication_factor = 2;
    shipper = sys->spawn(log_shipper, std::move(cfg));
    sched->run();
  }

  ~fixture() {
    // Unanswered appends hold their promises (and the shipper's request
    // timeouts): let them go with the actors.
    follower->appends.clear();
    caf::anon_send_exit(shipper, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(follower_actor, caf::exit_reason::user_shutdown);
    sched->run();
  }

  // The term begins on an empty log of epoch 1; the follower, answering at
  // once, is probed into sync.
  void begin() {
    auto start = std::make_shared<actors::replica_start>();
    start->meta.tenant = "t1";
    start->meta.name = "orders";
    start->meta.epoch = 1;
    start->meta.first_seq = 1;
    start->meta.term = 1;
    caf::anon_send(shipper, actors::begin_atom::value, actors::replica_start_ptr(start));
    sched->run();
  }

  // The hub ships these writes (each durable here at once), then the
  // actors run.
  void ship_writes(const std::vector<actors::replica_batch_ptr>& writes) {
    for (const auto& w : writes) {
      caf::anon_send(shipper, actors::ship_atom::value, w);
      caf::anon_send(shipper, actors::local_atom::value, w->meta.head_seq);
    }
    sched->run();
  }
  // One event each at these seqs, epoch 1.
  void ship(const std::vector<std::uint64_t>& seqs) {
    std::vector<actors::replica_batch_ptr> writes;
    for (auto seq : seqs) writes.push_back(write_of(seq));
    ship_writes(writes);
  }

  // The follower answers its oldest unanswered append: it holds what that
  // append carried.
  void answer_oldest() {
    caf::anon_send(follower_actor, answer_atom::value);
    sched->run();
  }

  std::size_t unanswered() const {
    std::size_t n = 0;
    for (const auto& a : follower->appends) n += a.answered ? 0 : 1;
    return n;
  }
};

}  // namespace

TEST_CASE_METHOD(fixture,
                 "a write shipped alone goes to the follower at once, writes shipped before the shipper "
                 "flushes go as one append, and the hub hears what the follower holds",
                 "[shipper]") {
  begin();
  REQUIRE_FALSE(follower->appends.empty());
  // Every append carries the follower's incarnation as the membership lists it.
  for (const auto& a : follower->appends) CHECK(a.message.follower_incarnation() == 7);
  const auto probes = follower->appends.size();
  follower->answer_at_once = false;

  ship({1});
  REQUIRE(follower->appends.size() == probes + 1);
  CHECK(seqs_of(follower->appends.back().message) == std::vector<std::uint64_t>{1});

  // Three writes in the mailbox before the shipper runs: one append.
  ship({2, 3, 4});
  REQUIRE(follower->appends.size() == probes + 2);
  const auto& merged = follower->appends.back().message;
  CHECK(seqs_of(merged) == std::vector<std::uint64_t>{2, 3, 4});
  CHECK(merged.prev_seq() == 1);
  CHECK(merged.synced());
  CHECK_FALSE(merged.reset());
  CHECK(hub->replicated == 0);

  answer_oldest();
  CHECK(hub->replicated == 1);
  answer_oldest();
  CHECK(hub->replicated == 4);
  CHECK(follower->appends.size() == probes + 2);  // nothing left to send
}

TEST_CASE_METHOD(fixture,
                 "at most eight appends are out to a follower: what is shipped meanwhile waits for an "
                 "answer, then goes as one append",
                 "[shipper]") {
  begin();
  const auto probes = follower->appends.size();
  follower->answer_at_once = false;
  for (std::uint64_t seq = 1; seq <= 8; ++seq) ship({seq});
  REQUIRE(follower->appends.size() == probes + 8);
  ship({9});
  ship({10});
  CHECK(follower->appends.size() == probes + 8);

  answer_oldest();
  CHECK(hub->replicated == 1);
  REQUIRE(follower->appends.size() == probes + 9);
  CHECK(seqs_of(follower->appends.back().message) == std::vector<std::uint64_t>{9, 10});
  CHECK(follower->appends.back().message.prev_seq() == 8);
  for (int k = 0; k < 8; ++k) answer_oldest();
  CHECK(hub->replicated == 10);
}

TEST_CASE_METHOD(fixture,
                 "a write that starts a new epoch goes to the follower alone, beginning at the log's first "
                 "seq, and the writes after it go together",
                 "[shipper]") {
  begin();
  const auto probes = follower->appends.size();
  follower->answer_at_once = false;
  // A fresh epoch of a log that keeps two events: its first seq moves
  // with every write after the second.
  ship_writes({write_of(1, 2, 1), write_of(2, 2, 1), write_of(3, 2, 2)});
  REQUIRE(follower->appends.size() == probes + 2);
  const auto& start = follower->appends[probes].message;
  CHECK(start.reset());
  CHECK(start.epoch() == 2);
  CHECK(start.prev_seq() == 0);
  CHECK(start.first_seq() == 1);  // the replica refuses a reset that does not begin there
  CHECK(seqs_of(start) == std::vector<std::uint64_t>{1});
  const auto& rest = follower->appends[probes + 1].message;
  CHECK_FALSE(rest.reset());
  CHECK(rest.epoch() == 2);
  CHECK(rest.prev_seq() == 1);
  CHECK(rest.first_seq() == 2);
  CHECK(seqs_of(rest) == std::vector<std::uint64_t>{2, 3});
}
