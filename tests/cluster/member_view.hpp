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

}  // namespace tidings::testing
