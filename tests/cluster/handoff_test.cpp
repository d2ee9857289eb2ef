// The handoff actor (cluster/handoff.hpp) on CAF's test coordinator, with
// a real store, group committer and replica host, and fakes for the one
// peer ("a", a node actor answering takes) and a hub of this node ("b"):
//   - as the holder: a take is answered only to the member seen as the
//     owner, in chunks with the epoch's keys first; a follower's copy no
//     owner vouched for is not handed out unless the record lists this
//     member; a pinned stream is not given away (draining: later);
//   - as the new owner: the log is pulled chunk by chunk and adopted, and
//     the holder hears when it is durable;
//   - rebalance and a drain's hand-over: the owner is asked, as this node,
//     to take each stream; the hand-over answers once all are taken, or
//     with how many are left when its time is up; a taken copy is deleted.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cluster/handoff.hpp"
#include "cluster/wire.hpp"
#include "proto/cluster.pb.h"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/cluster/member_view.hpp"

namespace {

using namespace tidings;
using namespace tidings::cluster;
using tidings::testing::seqs_of;
using tidings::testing::stream_placed_on;

// What the fake peer "a" was sent, and the take replies it gives in turn.
struct peer_script {
  std::deque<std::string> replies;  // TakeReply bytes
  std::vector<take_request> takes;
  std::vector<std::tuple<actors::stream_key, std::uint64_t, caf::actor_addr>> adopts;  // with the sender
  std::vector<std::pair<actors::stream_key, std::uint64_t>> taken;
};

caf::behavior fake_peer(caf::event_based_actor* self, const std::shared_ptr<peer_script>& script) {
  return {
      [script](take_atom, const std::string& bytes) {
        proto::TakeRequest req;
        REQUIRE(parse(bytes, &req));
        script->takes.push_back(from_proto(req));
        REQUIRE_FALSE(script->replies.empty());
        auto reply = script->replies.front();
        script->replies.pop_front();
        return reply;
      },
      [self, script](adopt_atom, const std::string& tenant, const std::string& stream, std::uint64_t term) {
        script->adopts.emplace_back(actors::stream_key{tenant, stream}, term,
                                    self->current_sender()->address());
      },
      [script](taken_atom, const std::string& tenant, const std::string& stream, std::uint64_t epoch) {
        script->taken.emplace_back(actors::stream_key{tenant, stream}, epoch);
      },
  };
}

// What a hub of this node was handed.
struct hub_script {
  std::optional<actors::stream_handoff_ptr> adopted;
  std::vector<std::string> holds;
};

actors::hub_handoff_actor::behavior_type fake_hub(actors::hub_handoff_actor::pointer,
                                                  const std::shared_ptr<hub_script>& script) {
  return {
      [script](actors::adopt_atom, const actors::stream_handoff_ptr& log) { script->adopted = log; },
      [script](actors::hold_atom, const std::string& why) { script->holds.push_back(why); },
      [](actors::quiesce_atom) { return true; },
  };
}

void run_in(caf::event_based_actor* self, const std::function<void(caf::event_based_actor*)>& body) {
  body(self);
}

persistence::stored_event event_at(std::uint64_t seq) {
  return {seq,
          core::event{"/o/" + std::to_string(seq), "ADDED", "{\"n\":" + std::to_string(seq) + "}", 1000}};
}

struct fixture : tidings::testing::coordinated_system {
  tidings::testing::member_view b{*sys, "b"};
  std::shared_ptr<peer_script> a_script = std::make_shared<peer_script>();
  std::shared_ptr<peer_script> b_script = std::make_shared<peer_script>();  // this node's node actor
  caf::actor a_node;
  caf::actor b_node;
  replica_host_actor replicas;
  handoff_actor handoff;

  fixture() {
    a_node = sys->spawn(fake_peer, a_script);
    b_node = sys->spawn(fake_peer, b_script);
    b.set_members({{member{"a", "127.0.0.1:1", "127.0.0.1:2", 1, false, ""}, a_node}});
    replicas = sys->spawn(replica_host, replica_host_config{"b", &*b.hubs, b.store.get(), &*b.committer,
                                                            &*b.view, std::chrono::milliseconds(5000)});
    handoff = sys->spawn(cluster::handoff, handoff_config{"b", b_node, &*b.hubs, b.store.get(), &*b.view,
                                                          replicas, std::chrono::milliseconds(5000)});
    sched->run();
  }

  ~fixture() {
    for (const auto& a : std::vector<caf::actor>{caf::actor_cast<caf::actor>(handoff),
                                                 caf::actor_cast<caf::actor>(replicas), a_node, b_node})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched->run();
    b.committer->stop();
  }

  // Writes a log of `events` events (epoch 7) into this node's store, as
  // `term_owner`'s ("" this node's own), with one Idempotency-Key per event.
  void store_log(const std::string& stream, std::uint64_t events, const std::string& term_owner = "") {
    persistence::write_set ws;
    persistence::stream_meta meta;
    meta.tenant = "t1";
    meta.name = stream;
    REQUIRE(b.store->allocate_stream_id(&meta.id).ok());
    meta.epoch = 7;
    meta.head_seq = events;
    meta.term = 1;
    meta.term_owner = term_owner;
    ws.stream_id = meta.id;
    ws.meta = meta;
    for (std::uint64_t seq = 1; seq <= events; ++seq) {
      ws.events.push_back(event_at(seq));
      ws.idempotency.push_back({"k" + std::to_string(seq), persistence::idempotency_record{7, seq, 1, 1000}});
    }
    std::promise<persistence::status> done;
    b.committer->submit(std::move(ws), [&done](const persistence::status& s) { done.set_value(s); });
    REQUIRE(done.get_future().get().ok());
  }

  bool stored(const std::string& stream) {
    std::optional<persistence::stream_meta> meta;
    REQUIRE(b.store->get_stream("t1", stream, &meta).ok());
    return meta.has_value();
  }

  log_chunk take(const std::string& requester, const std::string& stream, std::uint64_t after,
                 bool by_record = false) {
    auto answer = std::make_shared<std::optional<log_chunk>>();
    sys->spawn(run_in, [this, answer, req = take_request{{"t1", stream}, requester, after, by_record}](
                           caf::event_based_actor* self) {
      self->request(handoff, caf::infinite, take_atom::value, req).then([answer](const log_chunk& c) {
        *answer = c;
      });
    });
    run_until([answer] { return answer->has_value(); });
    return **answer;
  }

  // Asks for the hand-over; the answer lands in the returned slot.
  std::shared_ptr<std::optional<std::uint64_t>> hand_over() {
    auto answer = std::make_shared<std::optional<std::uint64_t>>();
    sys->spawn(run_in, [this, answer](caf::event_based_actor* self) {
      self->request(handoff, caf::infinite, handover_atom::value).then([answer](std::uint64_t left) {
        *answer = left;
      });
    });
    sched->run();
    return answer;
  }
};

}  // namespace

TEST_CASE_METHOD(fixture,
                 "as the holder, a take is answered only to the member seen as the owner, in chunks with the "
                 "epoch's keys first",
                 "[handoff]") {
  const auto stream = stream_placed_on("a");
  store_log(stream, chunk_events + 1);

  CHECK(take("c", stream, 0).status == log_chunk::kind::retry);  // not the owner here

  auto first = take("a", stream, 0);
  REQUIRE(first.status == log_chunk::kind::log);
  CHECK(first.meta.epoch == 7);
  CHECK(first.meta.head_seq == chunk_events + 1);
  CHECK(first.meta.term_owner == "b");  // this node's own log
  CHECK(first.events.size() == chunk_events);
  CHECK(first.more);
  CHECK(first.idempotency.size() == chunk_events + 1);

  auto last = take("a", stream, chunk_events);
  REQUIRE(last.status == log_chunk::kind::log);
  CHECK(seqs_of(last.events) == std::vector<std::uint64_t>{chunk_events + 1});
  CHECK_FALSE(last.more);
  CHECK(last.idempotency.empty());

  CHECK(take("a", stream_placed_on("a", 1), 0).status == log_chunk::kind::none);  // no copy here
}

TEST_CASE_METHOD(
    fixture,
    "as the holder, a follower's copy no owner vouched for goes only by the record, and a pinned "
    "stream not at all until this node drains",
    "[handoff]") {
  const auto copied = stream_placed_on("a");
  store_log(copied, 3, "c");  // a copy of lost member c's log, from before a restart
  CHECK(take("a", copied, 0).status == log_chunk::kind::none);
  auto by_record = take("a", copied, 0, true);
  REQUIRE(by_record.status == log_chunk::kind::log);
  CHECK(by_record.meta.term_owner == "c");
  CHECK(seqs_of(by_record.events) == std::vector<std::uint64_t>{1, 2, 3});

  const auto pinned = stream_placed_on("a", 1);
  store_log(pinned, 2);
  b.hubs->pin({"t1", pinned});
  CHECK(take("a", pinned, 0).status == log_chunk::kind::none);
  caf::anon_send(handoff, drain_atom::value);
  sched->run();
  CHECK(take("a", pinned, 0).status == log_chunk::kind::retry);
  b.hubs->unpin({"t1", pinned});
}

TEST_CASE_METHOD(fixture,
                 "as the new owner, the log is pulled from its holder chunk by chunk and adopted, and the "
                 "holder hears when it is durable",
                 "[handoff]") {
  const actors::stream_key key{"t1", stream_placed_on("b")};
  log_chunk first;
  first.status = log_chunk::kind::log;
  first.meta.epoch = 9;
  first.meta.head_seq = 3;
  first.meta.term_owner = "a";
  first.events = {event_at(1), event_at(2)};
  first.idempotency = {{"k1", persistence::idempotency_record{9, 1, 2, 1000}}};
  first.more = true;
  log_chunk second = first;
  second.events = {event_at(3)};
  second.idempotency.clear();
  second.more = false;
  a_script->replies = {to_proto(first).SerializeAsString(), to_proto(second).SerializeAsString()};

  auto hub = std::make_shared<hub_script>();
  caf::anon_send(handoff, pull_atom::value, key.tenant, key.name, sys->spawn(fake_hub, hub));
  run_until([hub] { return hub->adopted.has_value(); });

  REQUIRE(a_script->takes.size() == 2);
  CHECK(a_script->takes[0].requester == "b");
  CHECK(a_script->takes[0].after_seq == 0);
  CHECK(a_script->takes[1].after_seq == 2);
  const auto& log = *hub->adopted;
  REQUIRE(log);
  CHECK(log->meta.epoch == 9);
  CHECK(log->meta.head_seq == 3);
  CHECK(seqs_of(log->events) == std::vector<std::uint64_t>{1, 2, 3});
  REQUIRE(log->idempotency.size() == 1);
  CHECK(log->idempotency[0].first == "k1");

  REQUIRE(log->committed);
  log->committed();
  sched->run();
  REQUIRE(a_script->taken.size() == 1);
  CHECK(a_script->taken[0] == std::make_pair(key, std::uint64_t{9}));
}

TEST_CASE_METHOD(fixture,
                 "the owner is asked, as this node, to take each stream the store holds for it, a drain's "
                 "hand-over answers once all are taken, and each taken copy is deleted",
                 "[handoff]") {
  const auto s1 = stream_placed_on("a");
  const auto s2 = stream_placed_on("a", 1);
  store_log(s1, 2);
  store_log(s2, 1);
  store_log(stream_placed_on("b"), 1);  // this node's to keep

  caf::anon_send(handoff, rebalance_atom::value);
  sched->run();
  std::set<std::string> asked;
  for (const auto& [key, term, sender] : a_script->adopts) {
    asked.insert(key.name);
    CHECK(term == 1);
    CHECK(sender == b_node.address());
  }
  CHECK(asked == std::set<std::string>{s1, s2});
  CHECK(a_script->adopts.size() == 2);

  caf::anon_send(handoff, drain_atom::value);
  sched->run();
  caf::anon_send(handoff, rebalance_atom::value);  // draining, before the hand-over: nothing goes
  sched->run();
  CHECK(a_script->adopts.size() == 2);

  auto left = hand_over();
  CHECK(a_script->adopts.size() == 4);
  caf::anon_send(handoff, taken_atom::value, std::string("t1"), s1, std::uint64_t{7});
  sched->run();
  CHECK_FALSE(left->has_value());
  caf::anon_send(handoff, taken_atom::value, std::string("t1"), s2, std::uint64_t{7});
  run_until([left, this, s1, s2] { return left->has_value() && !stored(s1) && !stored(s2); });
  CHECK(**left == 0);
  CHECK(stored(stream_placed_on("b")));
}

TEST_CASE_METHOD(fixture, "a drain's hand-over answers with what is left when its time is up", "[handoff]") {
  const auto s1 = stream_placed_on("a");
  const auto s2 = stream_placed_on("a", 1);
  store_log(s1, 2);
  store_log(s2, 1);
  caf::anon_send(handoff, drain_atom::value);
  auto left = hand_over();
  caf::anon_send(handoff, taken_atom::value, std::string("t1"), s1, std::uint64_t{7});
  sched->run();
  CHECK_FALSE(left->has_value());
  sched->trigger_timeouts();
  sched->run();
  REQUIRE(left->has_value());
  CHECK(**left == 1);
}
