// The cluster secret's proofs (cluster/cluster_secret.hpp) and the peer gate
// (cluster/peer_gate.hpp) a node publishes on its cluster port (ADR 0024):
// the gate hands its node actor only to a dialler that proved it holds the
// secret over the gate's fresh nonce, once per nonce; a dialler sees at
// once when the gate proves nothing.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cluster/cluster_secret.hpp"
#include "cluster/peer_gate.hpp"
#include "proto/cluster.pb.h"

namespace {

using namespace tidings::cluster;
using namespace std::chrono_literals;

const cluster_secret secret(std::string(32, 's'));
const cluster_secret other(std::string(32, 'o'));

member named(std::string id) {
  member m;
  m.id = std::move(id);
  return m;
}

// Stands in for the node actor: answers a join with its handle, and counts.
caf::behavior counting_node(caf::event_based_actor* self, std::shared_ptr<std::vector<std::string>> joined) {
  return {
      [self, joined](join_atom, const caf::actor&, const std::string& member) {
        joined->push_back(member);
        return caf::make_message(caf::actor_cast<caf::actor>(self), std::string("members"));
      },
  };
}

struct gate_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::shared_ptr<std::vector<std::string>> joined = std::make_shared<std::vector<std::string>>();
  caf::actor node = sys.spawn(counting_node, joined);
  peer_gate_actor gate;
  caf::scoped_actor self{sys};
  const std::string here = to_string(sys.node());

  explicit gate_fixture(std::chrono::milliseconds ttl = 10s, std::size_t max_pending = 256) {
    peer_gate_config c;
    c.node = node;
    c.member_id = "gate-member";
    c.secret = std::make_shared<const cluster_secret>(secret);
    c.hello_ttl = ttl;
    c.max_pending = max_pending;
    gate = sys.spawn(peer_gate, std::move(c));
  }
  ~gate_fixture() {
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  }

  std::string hello(const std::string& nonce) {
    std::string out;
    self->request(gate, 5s, hello_atom::value, nonce)
        .receive([&](const std::string& h) { out = h; }, [&](caf::error& e) { FAIL(sys.render(e)); });
    return out;
  }
  // The dialler's join for `hello`, as a member holding `s` makes it.
  std::string join_for(const std::string& nonce, const std::string& hello, const cluster_secret& s = secret,
                       const std::string& member = "member a") {
    std::string why;
    auto out = answer_hello({s, member, here}, nonce, hello, named("gate-member"), here, &why);
    INFO(why);
    return out;
  }
  // The node handle the gate answers with; otherwise the refusal's text.
  std::variant<caf::actor, std::string> join(const std::string& join_bytes) {
    std::variant<caf::actor, std::string> out = std::string("no answer");
    self->request(gate, 5s, join_atom::value, caf::actor_cast<caf::actor>(self), join_bytes)
        .receive([&](const caf::actor& n, const std::string&) { out = n; },
                 [&](caf::error& e) { out = sys.render(e); });
    return out;
  }
  bool refused(const std::string& join_bytes) {
    auto r = join(join_bytes);
    auto* text = std::get_if<std::string>(&r);
    INFO((text ? *text : std::string("joined")));
    return text && text->find("join refused") != std::string::npos;
  }
};

}  // namespace

TEST_CASE("the proofs of a join bind every part, the role, and only this secret makes them", "[peer]") {
  auto n1 = make_nonce();
  auto n2 = make_nonce();
  CHECK(n1.size() == nonce_bytes);
  CHECK(n1 != n2);
  auto proof = secret.prove("gate", {n1, n2, "m"});
  CHECK(secret.verify("gate", {n1, n2, "m"}, proof));
  CHECK_FALSE(secret.verify("dialler", {n1, n2, "m"}, proof));
  CHECK_FALSE(secret.verify("gate", {n2, n1, "m"}, proof));
  CHECK_FALSE(secret.verify("gate", {n1, n2, "n"}, proof));
  CHECK_FALSE(secret.verify("gate", {n1 + n2, "", "m"}, proof));  // parts are length-prefixed
  CHECK_FALSE(other.verify("gate", {n1, n2, "m"}, proof));
  CHECK_FALSE(secret.verify("gate", {n1, n2, "m"}, proof.substr(1)));
  std::string why;
  CHECK_FALSE(secret.open("not a record", &why));
  CHECK(why.find("not a sealed member record") != std::string::npos);
  auto sealed = secret.seal("member bytes", "fingerprint");
  auto opened = secret.open(sealed, &why);
  REQUIRE(opened);
  CHECK(opened->member == "member bytes");
  CHECK(opened->security == "fingerprint");
  CHECK_FALSE(other.open(sealed, &why));
  CHECK(why == "sealed with another cluster secret");
  CHECK(secret.fingerprint("x") != other.fingerprint("x"));
  CHECK(secret.fingerprint("x") == secret.fingerprint("x"));
}

TEST_CASE("the peer gate gives its node only to a dialler that proves the secret to it, once per hello",
          "[peer]") {
  gate_fixture f;
  auto nonce = make_nonce();
  auto hello = f.hello(nonce);

  SECTION("a dialler with the secret joins; its proof does not serve twice") {
    auto join = f.join_for(nonce, hello);
    REQUIRE_FALSE(join.empty());
    auto r = f.join(join);
    REQUIRE(std::holds_alternative<caf::actor>(r));
    CHECK(std::get<caf::actor>(r) == f.node);
    CHECK(*f.joined == std::vector<std::string>{"member a"});
    CHECK(f.refused(join));  // the nonce is used up
    CHECK(f.joined->size() == 1);
  }
  SECTION("a dialler with another secret sees the gate unproven, and a join it makes anyway is refused") {
    CHECK(f.join_for(nonce, hello, other).empty());
    tidings::proto::PeerHello h;
    REQUIRE(h.ParseFromString(hello));
    tidings::proto::PeerJoin j;
    j.set_member("member r");
    j.set_nonce(h.nonce());
    j.set_target_id("gate-member");
    j.set_caf_node(f.here);
    j.set_proof(
        other.prove("tidings/peer-dialler/v1", {h.nonce(), nonce, "member r", "gate-member", f.here}));
    CHECK(f.refused(j.SerializeAsString()));
    CHECK(f.joined->empty());
    // Refusing did not stop the gate.
    CHECK_FALSE(f.hello(make_nonce()).empty());
  }
  SECTION("a proof altered, meant for another member or made by another process, is refused") {
    auto join = f.join_for(nonce, hello);
    tidings::proto::PeerJoin j;
    REQUIRE(j.ParseFromString(join));
    SECTION("another member's record") {
      j.set_member("member b");
    }
    SECTION("another target (a relay between two members)") {
      j.set_target_id("member c");
      j.set_proof(secret.prove("tidings/peer-dialler/v1",
                               {j.nonce(), nonce, j.member(), j.target_id(), j.caf_node()}));
    }
    SECTION("made on another CAF node than the one that sends it (a relay)") {
      j.set_caf_node("some other node");
      j.set_proof(secret.prove("tidings/peer-dialler/v1",
                               {j.nonce(), nonce, j.member(), j.target_id(), j.caf_node()}));
    }
    SECTION("an answer to a hello never given") {
      j.set_nonce(make_nonce());
    }
    CHECK(f.refused(j.SerializeAsString()));
    CHECK(f.joined->empty());
  }
  SECTION("a gate that is not the member dialled is not answered") {
    std::string why;
    CHECK(answer_hello({secret, "member a", f.here}, nonce, hello, named("member c"), f.here, &why).empty());
    CHECK(why.find("not member c") != std::string::npos);
    CHECK(answer_hello({secret, "member a", f.here}, nonce, hello, named("gate-member"), "another node", &why)
              .empty());
  }
}

TEST_CASE("the peer gate forgets hellos not answered in time, and the oldest first when too many wait",
          "[peer]") {
  SECTION("expired") {
    gate_fixture f(0ms);
    auto nonce = make_nonce();
    auto hello = f.hello(nonce);
    CHECK(f.refused(f.join_for(nonce, hello)));
  }
  SECTION("crowded out") {
    gate_fixture f(10s, 1);
    auto first = make_nonce();
    auto first_hello = f.hello(first);
    auto second = make_nonce();
    auto second_hello = f.hello(second);
    CHECK(f.refused(f.join_for(first, first_hello)));
    CHECK(std::holds_alternative<caf::actor>(f.join(f.join_for(second, second_hello))));
  }
  SECTION("a hello without a proper nonce is refused") {
    gate_fixture f;
    std::string answer = "none";
    f.self->request(f.gate, 5s, hello_atom::value, std::string("short"))
        .receive([&](const std::string&) { answer = "answered"; },
                 [&](caf::error& e) { answer = f.sys.render(e); });
    CHECK(answer.find("join refused") != std::string::npos);
  }
}
