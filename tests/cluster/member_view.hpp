#pragma once

// A member's store, hubs and cluster view, for the deterministic tests of
// the cluster actors that read placement and write the store (the log
// shipper, the replica actor): members "a" and "b" are live, this one is
// `self_id`.

#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "actors/hub_registry.hpp"
#include "cluster/cluster_view.hpp"
#include "cluster/replica_append.hpp"
#include "core/placement.hpp"
#include "persistence/group_commit.hpp"
#include "persistence/store.hpp"
#include "tests/persistence/temp_dir.hpp"

namespace tidings::testing {

struct member_view {
  persistence::testing::temp_dir dir;
  std::unique_ptr<persistence::store> store;
  std::optional<persistence::group_committer> committer;
  std::optional<actors::hub_registry> hubs;
  std::optional<cluster::cluster_view> view;

  member_view(caf::actor_system& sys, const std::string& self_id) {
    REQUIRE(persistence::store::open(dir.db(), persistence::durability::batch, &store).ok());
    committer.emplace(*store);
    hubs.emplace(sys, *store, *committer, actors::hub_defaults{});
    view.emplace(sys, self_id, *hubs, 64);
  }

  // The view: {a, b} live, with these peers connected.
  void set_members(std::vector<std::pair<cluster::member, caf::actor>> peers = {}) {
    auto m = std::make_shared<cluster::membership>();
    m->self_id = view->self_id();
    m->live = {"a", "b"};
    m->holders = {"a", "b"};
    m->peers = std::move(peers);
    view->update(m);
  }
};

// A stream that rendezvous over {a, b} places on `owner` (`skip`: a later one).
inline std::string stream_placed_on(const std::string& owner, int skip = 0) {
  const std::vector<std::string> both{"a", "b"};
  for (int k = 0;; ++k) {
    auto name = "s" + std::to_string(k);
    if (core::owner_of(both, "t1", name) == owner && skip-- == 0) return name;
  }
}

// The seqs of `events`, in order.
inline std::vector<std::uint64_t> seqs_of(const std::vector<persistence::stored_event>& events) {
  std::vector<std::uint64_t> out;
  out.reserve(events.size());
  for (const auto& e : events) out.push_back(e.seq);
  return out;
}

// An owner's append of epoch 1 whose events are `seqs` (a reset when it
// starts the log), with the copy whole once it is written.
inline cluster::replica_append_ptr append_of(const actors::stream_key& stream, const std::string& owner,
                                             std::uint64_t term, std::uint64_t prev_seq,
                                             std::vector<std::uint64_t> seqs) {
  auto a = std::make_shared<cluster::replica_append>();
  a->stream = stream;
  a->owner = owner;
  a->term = term;
  a->epoch = 1;
  a->prev_seq = prev_seq;
  a->first_seq = 1;
  a->synced = true;
  a->reset = prev_seq == 0;
  for (auto seq : seqs)
    a->events.push_back({seq, core::event{"/o/" + std::to_string(seq), "ADDED", "{}", 0}});
  return a;
}

}  // namespace tidings::testing
