// A node's cluster certificate (cluster/node_certificate.hpp, ADR 0032): what
// start refuses, what a member's record must carry, the signatures that bind
// a join to that record, and the sealed copies CAF reads. The certificates
// are made here with OpenSSL (tests/support/test_pki.hpp).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "cluster/node_certificate.hpp"
#include "cluster/peer_gate.hpp"
#include "proto/cluster.pb.h"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace {

using namespace tidings::cluster;
using namespace std::chrono_literals;
using tidings::testing::leaf_spec;
using tidings::testing::pem_files;
using tidings::testing::test_ca;
using tidings::testing::usage;

leaf_spec node_spec(const std::string& name) {
  leaf_spec s{name, {"DNS:" + name}};
  s.usage = usage::server_and_client;
  return s;
}

struct pki {
  tidings::testing::temp_dir dir;
  test_ca ca{dir.path().string(), "cluster"};
  test_ca rogue{dir.path().string(), "rogue"};

  std::shared_ptr<const node_certificate> load(const pem_files& node, std::string* why,
                                               const std::string& key = "") {
    return node_certificate::load(ca.files().cert, node.cert, key.empty() ? node.key : key, why);
  }
  std::shared_ptr<const node_certificate> node(const std::string& name) {
    std::string why;
    auto cert = load(ca.issue(name, node_spec(name)), &why);
    INFO(why);
    REQUIRE(cert);
    return cert;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("a node's cluster certificate is refused at start unless the cluster CA signed it for both ends",
          "[cluster_tls]") {
  pki p;
  std::string why;
  SECTION("a good one loads, names its subject and fingerprints its CA") {
    auto cert = p.node("node-a");
    CHECK(cert->subject().find("CN=node-a") != std::string::npos);
    CHECK(cert->ca_fingerprint().size() == 64);
    CHECK(cert->check_peer(cert->der()).empty());
    CHECK(cert->not_after() > std::chrono::system_clock::now());
  }
  SECTION("another CA's") {
    CHECK_FALSE(p.load(p.rogue.issue("odd", node_spec("odd")), &why));
    CHECK(why.find("is not a certificate of the cluster CA") != std::string::npos);
  }
  SECTION("expired") {
    auto spec = node_spec("old");
    spec.not_before = -48h;
    spec.not_after = -24h;
    CHECK_FALSE(p.load(p.ca.issue("old", spec), &why));
    CHECK(why.find("expired") != std::string::npos);
  }
  SECTION("for the server end only") {
    auto spec = node_spec("half");
    spec.usage = usage::server;
    CHECK_FALSE(p.load(p.ca.issue("half", spec), &why));
    CHECK(why.find("clientAuth") != std::string::npos);
  }
  SECTION("with another certificate's key") {
    auto other = p.ca.issue("other", node_spec("other"));
    CHECK_FALSE(p.load(p.ca.issue("mine", node_spec("mine")), &why, other.key));
    CHECK(why.find("is not the key of the certificate") != std::string::npos);
  }
  SECTION("a file that is missing, or holds no certificate") {
    auto good = p.ca.issue("good", node_spec("good"));
    CHECK_FALSE(node_certificate::load(p.ca.files().cert, good.cert, "/nonexistent/key.pem", &why));
    CHECK(why == "/nonexistent/key.pem: cannot be read");
    CHECK_FALSE(node_certificate::load(good.key, good.cert, good.key, &why));
    CHECK(why.find("holds no PEM certificate") != std::string::npos);
  }
}

TEST_CASE("a member record's certificate is checked against the CA, and signatures bind to its key",
          "[cluster_tls]") {
  pki p;
  auto a = p.node("node-a");
  auto b = p.node("node-b");
  std::string why;
  auto odd_files = p.rogue.issue("odd", node_spec("odd"));
  auto odd = node_certificate::load(p.rogue.files().cert, odd_files.cert, odd_files.key, &why);
  REQUIRE(odd);
  CHECK(a->check_peer(b->der()).empty());
  CHECK(a->check_peer(odd->der()).find("is not one of the cluster CA") != std::string::npos);
  CHECK(a->check_peer("").find("no certificate") != std::string::npos);
  CHECK(a->ca_fingerprint() != odd->ca_fingerprint());

  auto sig = a->sign("role", {"n1", "n2"});
  CHECK(signed_by(a->der(), "role", {"n1", "n2"}, sig));
  CHECK_FALSE(signed_by(b->der(), "role", {"n1", "n2"}, sig));
  CHECK_FALSE(signed_by(a->der(), "other role", {"n1", "n2"}, sig));
  CHECK_FALSE(signed_by(a->der(), "role", {"n1n", "2"}, sig));
  CHECK_FALSE(signed_by("", "role", {"n1", "n2"}, sig));
}

TEST_CASE("CAF reads sealed copies of the files, which stay as they were read", "[cluster_tls]") {
  pki p;
  auto files = p.ca.issue("node-a", node_spec("node-a"));
  std::string why;
  auto cert = p.load(files, &why);
  REQUIRE(cert);
  auto frozen = frozen_tls_files::freeze(*cert, &why);
  INFO(why);
  REQUIRE(frozen);
  CHECK(slurp(frozen->cert_path()) == slurp(files.cert));
  CHECK(slurp(frozen->key_path()) == slurp(files.key));
  CHECK(slurp(frozen->ca_path()) == slurp(p.ca.files().cert));
  // A renewal written over the operator's file changes nothing CAF reads.
  std::ofstream(files.cert) << "half-written";
  CHECK(slurp(frozen->cert_path()) == cert->cert_pem());
  // And the copy itself cannot be written.
  int fd = ::open(frozen->cert_path().c_str(), O_WRONLY);
  if (fd >= 0) {
    CHECK(::write(fd, "x", 1) < 0);
    ::close(fd);
  }
}

namespace {

// Spawned with an argument: CAF 0.17 spawning a function without any binds
// a null argument tuple, which UBSan reports.
caf::behavior node_stand_in(caf::event_based_actor* self, const std::string& /*name*/) {
  return {
      [self](join_atom, const caf::actor&, const std::string&) {
        return caf::make_message(caf::actor_cast<caf::actor>(self), std::string("members"));
      },
  };
}

}  // namespace

TEST_CASE("with cluster TLS a join must be signed with the key of the certificate its member record carries",
          "[cluster_tls][peer]") {
  pki p;
  auto gate_cert = p.node("gate");
  auto a = p.node("node-a");
  auto b = p.node("node-b");
  auto secret = std::make_shared<const cluster_secret>(std::string(32, 's'));
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto node = sys.spawn(node_stand_in, std::string("gate"));
  peer_gate_config gc;
  gc.node = node;
  gc.member_id = "gate";
  gc.secret = secret;
  gc.tls = gate_cert;
  auto gate = sys.spawn(peer_gate, std::move(gc));
  const auto here = to_string(sys.node());
  member gate_member;
  gate_member.id = "gate";
  gate_member.certificate = gate_cert->der();

  auto hello = [&](const std::string& nonce) {
    std::string out;
    self->request(gate, 5s, hello_atom::value, nonce)
        .receive([&](const std::string& h) { out = h; }, [&](caf::error& e) { FAIL(sys.render(e)); });
    return out;
  };
  auto join = [&](const std::string& bytes) {
    std::string outcome = "no answer";
    self->request(gate, 5s, join_atom::value, caf::actor_cast<caf::actor>(self), bytes)
        .receive([&](const caf::actor&, const std::string&) { outcome = "joined"; },
                 [&](caf::error& e) { outcome = sys.render(e); });
    return outcome;
  };
  // Member a's record: its certificate.
  tidings::proto::Member record;
  record.set_id("node-a");
  record.set_certificate(a->der());
  auto nonce = make_nonce();
  auto h = hello(nonce);
  std::string why;

  SECTION("signed with the record's key: joined") {
    auto j =
        answer_hello({*secret, record.SerializeAsString(), here, a.get()}, nonce, h, gate_member, here, &why);
    INFO(why);
    REQUIRE_FALSE(j.empty());
    CHECK(join(j) == "joined");
  }
  SECTION("signed with another member's key (b holds a's record): refused") {
    auto j =
        answer_hello({*secret, record.SerializeAsString(), here, b.get()}, nonce, h, gate_member, here, &why);
    REQUIRE_FALSE(j.empty());
    CHECK(join(j).find("not signed with the key of the certificate in its member record") !=
          std::string::npos);
  }
  SECTION("not signed at all (a dialler without cluster TLS): refused") {
    auto j =
        answer_hello({*secret, record.SerializeAsString(), here, nullptr}, nonce, h, gate_member, here, &why);
    REQUIRE_FALSE(j.empty());
    CHECK(join(j).find("join refused") != std::string::npos);
  }
  SECTION("a gate whose hello another key signed is not answered") {
    member impostor = gate_member;
    impostor.certificate = b->der();
    CHECK(answer_hello({*secret, record.SerializeAsString(), here, a.get()}, nonce, h, impostor, here, &why)
              .empty());
    CHECK(why.find("not signed with the key of the certificate in member gate's record") !=
          std::string::npos);
  }
  caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
}
