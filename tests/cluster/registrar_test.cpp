// The registrar (cluster/registrar.hpp) on CAF's test coordinator, against
// a control plane the test answers step by step: registration, the agreed
// list and its changes, and above all the lapse rules: a node whose lease
// is gone or may be gone hears so before anything the record said after
// that, and answers meant for an earlier registration count for nothing.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cluster/registrar.hpp"
#include "cluster/wire.hpp"
#include "tests/cluster/coordinated_system.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace tidings::cluster;
using namespace std::chrono_literals;

// Every request the registrar made, with the callback the test answers.
struct fake_plane final : control_plane {
  std::vector<std::function<void(std::string, std::int64_t, std::int64_t)>> grants;
  std::vector<std::pair<std::int64_t, std::function<void(std::string, std::int64_t)>>> renewals;
  std::vector<std::int64_t> revoked;
  struct put_call {
    std::string key;
    std::string value;
    std::int64_t lease;
    std::function<void(std::string)> done;
  };
  std::vector<put_call> puts;
  std::vector<std::function<void(std::string, std::vector<plane_kv>, std::int64_t)>> lists;
  struct watch_call {
    std::string prefix;
    std::int64_t after;
    std::function<void(std::vector<plane_change>, std::int64_t)> changed;
    std::function<void(std::string)> ended;
  };
  std::vector<watch_call> watches;

  void grant(std::int64_t, std::function<void(std::string, std::int64_t, std::int64_t)> done) override {
    grants.push_back(std::move(done));
  }
  void keep_alive(std::int64_t lease, std::function<void(std::string, std::int64_t)> done) override {
    renewals.emplace_back(lease, std::move(done));
  }
  void revoke(std::int64_t lease, std::function<void(std::string)> done) override {
    revoked.push_back(lease);
    done("");
  }
  void put(std::string key, std::string value, std::int64_t lease,
           std::function<void(std::string)> done) override {
    puts.push_back({std::move(key), std::move(value), lease, std::move(done)});
  }
  void list(std::string,
            std::function<void(std::string, std::vector<plane_kv>, std::int64_t)> done) override {
    lists.push_back(std::move(done));
  }
  void watch(std::string prefix, std::int64_t after,
             std::function<void(std::vector<plane_change>, std::int64_t)> changed,
             std::function<void(std::string)> ended) override {
    watches.push_back({std::move(prefix), after, std::move(changed), std::move(ended)});
  }
  // The registrar keeps no stream records.
  void get(std::string, std::function<void(std::string, plane_record)> done) override {
    done("not used here", {});
  }
  void swap(std::string, std::int64_t, std::string,
            std::function<void(std::string, bool, plane_record)> done) override {
    done("not used here", false, {});
  }
  void stop() override {}
};

member make(const std::string& id, std::int64_t incarnation = 1) {
  return member{id, "127.0.0.1:71" + id, "127.0.0.1:81" + id, incarnation, false, ""};
}

member with_certificate(member m, const node_certificate* cert) {
  if (cert) m.certificate = cert->der();
  return m;
}

// The cluster's secret and security fingerprint in these tests.
const cluster_secret test_secret(std::string(32, 's'));
const std::string test_security = test_secret.fingerprint("tenants: none");

// A record as a member with this secret and fingerprint puts it.
std::string value_of(const member& m, const cluster_secret& secret = test_secret,
                     const std::string& security = test_security) {
  return secret.seal(to_proto(m).SerializeAsString(), security);
}

// What the node actor would hear.
struct heard {
  std::vector<std::vector<std::string>> lists;  // ids per agreed list
  std::vector<std::int64_t> lapses;             // the new incarnation per lapse
  std::vector<std::string> order;               // "agreed" / "lapsed" as they came
};

caf::behavior listener(caf::event_based_actor*, std::shared_ptr<heard> h) {
  return {
      [h](agreed_atom, const agreed_members_ptr& list) {
        std::vector<std::string> ids;
        for (const auto& m : list->members) ids.push_back(m.id);
        h->lists.push_back(ids);
        h->order.emplace_back("agreed");
      },
      [h](lapsed_atom, std::int64_t incarnation) {
        h->lapses.push_back(incarnation);
        h->order.emplace_back("lapsed");
      },
  };
}

// Asks the registrar to leave. (Spawned with arguments: CAF 0.17 spawning
// a function without any binds a null argument tuple, which UBSan reports.)
void ask_leave(caf::event_based_actor* self, registrar_actor reg, std::shared_ptr<bool> answered) {
  self->request(reg, caf::infinite, leave_atom::value).then([answered](bool) { *answered = true; });
}

struct fixture : tidings::testing::coordinated_system {
  std::shared_ptr<fake_plane> plane = std::make_shared<fake_plane>();
  std::shared_ptr<heard> h = std::make_shared<heard>();
  registrar_actor reg;
  const std::string prefix = "/t/";
  const member self_record;

  // With `tls`, members' records must carry a certificate of its CA.
  explicit fixture(std::shared_ptr<const node_certificate> tls = nullptr)
      : self_record(with_certificate(make("a", 7), tls.get())) {
    registrar_config rc;
    rc.tls = tls;
    rc.self = self_record;
    rc.prefix = prefix;
    rc.lease_seconds = 2;
    rc.plane = plane;
    rc.secret = std::make_shared<const cluster_secret>(test_secret);
    rc.security = test_security;
    rc.listener = sys->spawn(listener, h);
    reg = sys->spawn(registrar, std::move(rc));
    sched->run();
  }
  ~fixture() {
    caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
    sched->run();
  }

  // Grant, put and list answered: the record lists `others` and this node.
  void register_with(const std::vector<member>& others, std::int64_t revision = 10) {
    REQUIRE_FALSE(plane->grants.empty());
    plane->grants.back()("", 100 + static_cast<std::int64_t>(plane->grants.size()), 2);
    sched->run();
    REQUIRE_FALSE(plane->puts.empty());
    CHECK(plane->puts.back().key == member_key(prefix, "a"));
    plane->puts.back().done("");
    sched->run();
    REQUIRE_FALSE(plane->lists.empty());
    std::vector<plane_kv> kvs;
    for (const auto& m : others) kvs.push_back({member_key(prefix, m.id), value_of(m)});
    auto me = self_record;
    me.incarnation += static_cast<std::int64_t>(h->lapses.size());
    kvs.push_back({member_key(prefix, "a"), value_of(me)});
    plane->lists.back()("", kvs, revision);
    sched->run();
  }
};

}  // namespace

TEST_CASE("the registrar registers under a lease, then reports the agreed list and its changes",
          "[registrar]") {
  fixture f;
  CHECK(f.h->order.empty());  // nothing before this node is listed
  f.register_with({make("b")});
  REQUIRE(f.h->lists.size() == 1);
  CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b"});
  CHECK(f.plane->puts.back().lease == 101);
  REQUIRE(f.plane->watches.size() == 1);
  CHECK(f.plane->watches.back().after == 10);

  f.plane->watches.back().changed({{false, member_key(f.prefix, "c"), value_of(make("c"))}}, 11);
  f.sched->run();
  CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b", "c"});
  f.plane->watches.back().changed({{true, member_key(f.prefix, "b"), ""}}, 12);
  f.sched->run();
  CHECK(f.h->lists.back() == std::vector<std::string>{"a", "c"});
  CHECK(f.h->lapses.empty());

  SECTION("a watch that ends is replaced by a fresh list and a watch from its revision") {
    f.plane->watches.back().ended("connection reset");
    f.sched->run();
    REQUIRE(f.plane->lists.size() == 2);
    f.plane->lists.back()("", {{member_key(f.prefix, "a"), value_of(f.self_record)}}, 20);
    f.sched->run();
    CHECK(f.h->lists.back() == std::vector<std::string>{"a"});
    REQUIRE(f.plane->watches.size() == 2);
    CHECK(f.plane->watches.back().after == 20);
  }
  SECTION("draining puts this node's record again, saying so") {
    caf::anon_send(f.reg, drain_atom::value);
    f.sched->run();
    std::string why;
    auto opened = test_secret.open(f.plane->puts.back().value, &why);
    REQUIRE(opened);
    CHECK(opened->security == test_security);
    tidings::proto::Member p;
    REQUIRE(p.ParseFromString(opened->member));
    CHECK(p.draining());
    CHECK(f.plane->puts.back().lease == 101);
  }
  SECTION("leaving revokes the lease") {
    auto answered = std::make_shared<bool>(false);
    f.sys->spawn(ask_leave, f.reg, answered);
    f.sched->run();
    CHECK(*answered);
    CHECK(f.plane->revoked == std::vector<std::int64_t>{101});
  }
}

TEST_CASE("the registrar renews its lease and lapses when it could not renew in time", "[registrar]") {
  fixture f;
  f.register_with({make("b")});
  // Renewals every third of the TTL, each answered: no lapse however long.
  for (int i = 0; i < 9; ++i) {
    f.sched->advance_time(700ms);
    f.sched->run();
    for (auto& [lease, done] : f.plane->renewals)
      if (done) std::exchange(done, nullptr)("", 2);
    f.sched->run();
  }
  CHECK(f.plane->renewals.size() >= 6);
  CHECK(f.h->lapses.empty());

  SECTION("renewals that fail for a whole TTL") {
    for (int i = 0; i < 3; ++i) {
      f.sched->advance_time(700ms);
      f.sched->run();
      for (auto& [lease, done] : f.plane->renewals)
        if (done) std::exchange(done, nullptr)("etcd unreachable", 0);
      f.sched->run();
    }
    REQUIRE(f.h->lapses.size() == 1);
    CHECK(f.h->lapses.front() == 8);     // a new life
    CHECK(f.plane->grants.size() == 2);  // registering again
  }
  SECTION("the record says the lease is gone") {
    f.sched->advance_time(700ms);
    f.sched->run();
    REQUIRE(f.plane->renewals.back().second);
    f.plane->renewals.back().second("", 0);
    f.sched->run();
    CHECK(f.h->lapses.size() == 1);
  }
}

TEST_CASE(
    "the registrar lapses at nine tenths of the TTL after its last answered renewal was sent, between ticks "
    "too",
    "[registrar]") {
  fixture f;
  f.register_with({make("b")});  // granted at time 0, TTL 2 s
  // Renewals go out but none is answered. etcd counts the TTL from no
  // earlier than the grant's sending; this node gives up 10 % early (a
  // clock running slow, a late timer) and on time, not at its next tick.
  f.sched->advance_time(1799ms);
  f.sched->run();
  CHECK(f.h->lapses.empty());
  CHECK_FALSE(f.plane->renewals.empty());
  f.sched->advance_time(1ms);
  f.sched->run();
  CHECK(f.h->lapses.size() == 1);
}

TEST_CASE("a node paused past its lease hears it lapsed before any later news of the others", "[registrar]") {
  fixture f;
  f.register_with({make("b")});
  REQUIRE(f.h->lists.size() == 1);
  // Paused: no tick ran, but the clock moved on past the TTL; then the
  // watch delivers what happened meanwhile (the owner b went away).
  f.sched->clock().current_time += 3s;
  f.plane->watches.back().changed({{true, member_key(f.prefix, "b"), ""}}, 30);
  f.sched->run();
  REQUIRE(f.h->order.size() == 2);
  CHECK(f.h->order.back() == "lapsed");
  CHECK(f.h->lists.size() == 1);  // b's departure was not reported to a non-member

  SECTION("its own key deleted, even with renewals on time") {
    // (a fresh registration first)
    f.register_with({make("b")}, 40);
    f.plane->watches.back().changed(
        {{true, member_key(f.prefix, "a"), ""}, {true, member_key(f.prefix, "b"), ""}}, 41);
    f.sched->run();
    CHECK(f.h->order.back() == "lapsed");
    CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b"});
  }
  SECTION("answers meant for the lapsed registration count for nothing") {
    auto stale_list = f.plane->lists.front();
    stale_list("", {{member_key(f.prefix, "a"), value_of(f.self_record)}}, 50);
    f.sched->run();
    CHECK(f.h->order.back() == "lapsed");
    f.register_with({}, 60);
    CHECK(f.h->order.back() == "agreed");
    CHECK(f.h->lists.back() == std::vector<std::string>{"a"});
    CHECK(f.h->lapses.back() == 8);
  }
}

TEST_CASE("a failed grant is tried again after a pause", "[registrar]") {
  fixture f;
  REQUIRE(f.plane->grants.size() == 1);
  f.plane->grants.back()("etcd unreachable", 0, 0);
  f.sched->run();
  CHECK(f.plane->grants.size() == 1);
  f.sched->advance_time(250ms);
  f.sched->run();
  CHECK(f.plane->grants.size() == 2);
  f.register_with({});
  CHECK(f.h->lists.back() == std::vector<std::string>{"a"});
}

TEST_CASE(
    "records sealed with another secret, forged, copied under another key or with another security "
    "fingerprint "
    "are refused, and a node they outnumber steps aside as a new life",
    "[registrar]") {
  fixture f;
  const cluster_secret other_secret(std::string(32, 'o'));
  auto forged = value_of(make("d"));
  forged[forged.size() / 2] ^= 0x20;  // a flipped bit inside the sealed member or its proof
  f.register_with({make("b")});
  REQUIRE(f.h->lists.back() == std::vector<std::string>{"a", "b"});
  const auto puts_before = f.plane->puts.size();

  f.plane->watches.back().changed(
      {{false, member_key(f.prefix, "c"), value_of(make("c"), other_secret)},
       {false, member_key(f.prefix, "e"), to_proto(make("e")).SerializeAsString()}},  // never sealed
      11);
  f.sched->run();
  // Two refused against two accepted (this node's own among them): a tie,
  // and this node cannot tell which side is right: it lapses into a new
  // life, says so in the record, and takes no part.
  CHECK(f.h->order == std::vector<std::string>{"agreed", "lapsed", "agreed"});
  CHECK(f.h->lists.back().empty());
  REQUIRE(f.h->lapses == std::vector<std::int64_t>{8});
  REQUIRE(f.plane->puts.size() == puts_before + 1);
  std::string why;
  auto put = test_secret.open(f.plane->puts.back().value, &why);
  REQUIRE(put);
  tidings::proto::Member p;
  REQUIRE(p.ParseFromString(put->member));
  CHECK(p.incarnation() == 8);

  f.plane->watches.back().changed({{true, member_key(f.prefix, "e"), ""}}, 12);
  f.sched->run();
  CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b"});  // c is still refused
  CHECK(f.h->lapses.size() == 1);

  f.plane->watches.back().changed({{false, member_key(f.prefix, "d"), forged},
                                   {false, member_key(f.prefix, "f"), value_of(make("f"))},
                                   {false, member_key(f.prefix, "g"),
                                    value_of(make("g"), test_secret, test_secret.fingerprint("other"))}},
                                  13);
  f.sched->run();
  // c, d and g refused; a, b and f accepted: a tie again.
  CHECK(f.h->lists.back().empty());
  CHECK(f.h->lapses == std::vector<std::int64_t>{8, 9});
  f.plane->watches.back().changed({{false, member_key(f.prefix, "h"), value_of(make("h"))}}, 14);
  f.sched->run();
  CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b", "f", "h"});

  SECTION("a refused member that comes back with the right seal is accepted") {
    f.plane->watches.back().changed({{false, member_key(f.prefix, "c"), value_of(make("c"))}}, 15);
    f.sched->run();
    CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b", "c", "f", "h"});
  }
  SECTION("a member's sealed record copied under another key counts for nothing") {
    f.plane->watches.back().changed(
        {{true, member_key(f.prefix, "c"), ""}, {true, member_key(f.prefix, "d"), ""}}, 15);
    f.plane->watches.back().changed({{false, member_key(f.prefix, "x"), value_of(make("b"))}}, 16);
    f.sched->run();
    CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b", "f", "h"});
    f.plane->watches.back().changed({{true, member_key(f.prefix, "b"), ""}}, 17);
    f.sched->run();
    CHECK(f.h->lists.back() == std::vector<std::string>{"a", "f", "h"});  // gone with its own key
  }
}

TEST_CASE("with cluster TLS a record whose certificate the cluster CA did not sign is refused",
          "[registrar]") {
  tidings::testing::temp_dir dir;
  tidings::testing::test_ca ca(dir.path().string(), "cluster");
  tidings::testing::test_ca rogue(dir.path().string(), "rogue");
  auto load = [](const tidings::testing::test_ca& by, const tidings::testing::pem_files& files) {
    std::string why;
    auto cert = node_certificate::load(by.files().cert, files.cert, files.key, &why);
    INFO(why);
    REQUIRE(cert);
    return cert;
  };
  auto node = [](const std::string& name) {
    tidings::testing::leaf_spec s{name, {"DNS:" + name}};
    s.usage = tidings::testing::usage::server_and_client;
    return s;
  };
  auto a = load(ca, ca.issue("a", node("a")));
  auto b = load(ca, ca.issue("b", node("b")));
  auto odd = load(rogue, rogue.issue("odd", node("odd")));
  fixture f(a);
  // Sealed with the secret and the same fingerprint: only the certificate
  // tells them apart (a process that holds the secret but no certificate of
  // the CA, or copied a member's record without its key).
  f.register_with({with_certificate(make("b"), b.get()), with_certificate(make("c"), odd.get()), make("d"),
                   with_certificate(make("e"), b.get())});
  CHECK(f.h->lists.back() == std::vector<std::string>{"a", "b", "e"});
  CHECK(f.h->lapses.empty());
}
