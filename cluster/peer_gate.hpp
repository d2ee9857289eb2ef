#pragma once

// The peer gate (ADR 0024): the one actor a node publishes on its cluster
// port. A tidingsd (or any CAF client) that connects is handed this gate;
// it gets the node actor only after proving that it holds the cluster's
// secret, by a challenge-response over fresh nonces of both sides. The
// dialler checks the gate's proof before it proves anything itself or
// hands over its own node actor. Each proof names who proves to whom (the
// member ids and CAF node ids of both ends), so a process in between that
// relays one member's hello and join to another gets refused by both. A
// proven join goes to the node actor, which still takes the peer only if
// the agreed record lists that life of it.
//
// What this does not stop: a process that writes CAF's wire protocol by
// hand can address any actor a node ever sent out by its number, and can
// claim any sender. Without cluster TLS the cluster port must stay private
// (docs/cluster.md, "What the cluster port trusts"). With it (ADR 0032) no
// process without a certificate of the cluster CA gets a connection, and
// both proofs are also signed with the key of the certificate the prover's
// member record carries: a member's record alone is no member.
//
//   dialler                           gate
//     hello(n_d)            ─────>   n_g fresh, kept (bounded, 10 s)
//                           <─────   PeerHello{n_g, id_g, node_g, HMAC("gate", n_d, n_g, id_g, node_g)}
//     checks proof, id_g, node_g
//     join(node_actor_d, PeerJoin{member_d, n_g, id_g, node_d, HMAC("dialler", n_g, n_d, ...)})
//                           ─────>   n_g used up; proof, id_g, node_d checked
//                           <─────   (node_actor_g, Members{its own record})

#include <caf/all.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "cluster/atoms.hpp"
#include "cluster/cluster_secret.hpp"
#include "cluster/member_table.hpp"
#include "cluster/node_certificate.hpp"

namespace tidings::cluster {

using peer_gate_actor =
    caf::typed_actor<caf::replies_to<hello_atom, std::string>::with<std::string>,
                     caf::replies_to<join_atom, caf::actor, std::string>::with<caf::actor, std::string>>;

struct peer_gate_config {
  caf::actor node;        // answers (join_atom, actor, Member) -> (actor, Members)
  std::string member_id;  // the node's
  std::shared_ptr<const cluster_secret> secret;
  std::shared_ptr<const node_certificate> tls;  // with cluster TLS: signs hellos, checks joins' signatures
  std::chrono::milliseconds hello_ttl{10000};   // a nonce not answered by then is forgotten
  std::size_t max_pending = 256;                // nonces kept at once (the oldest go first)
};

struct peer_gate_state {
  static inline const char* name = "cluster-peer-gate";

  peer_gate_config cfg;
  struct hello {
    std::string dialler_nonce;
    caf::actor_clock::time_point at;
  };
  std::map<std::string, hello> pending;  // by the gate's nonce; each answers one join
  std::deque<std::string> order;         // the gate's nonces, oldest first
  // Refusals are logged at most once per 10 s (with how many there were):
  // anyone who reaches the port could fill the log otherwise.
  caf::actor_clock::time_point refusals_logged{};
  std::uint64_t refusals_unlogged = 0;
};

peer_gate_actor::behavior_type peer_gate(peer_gate_actor::stateful_pointer<peer_gate_state> self,
                                         peer_gate_config cfg);

// The dialler's side of a join.
struct dialler {
  const cluster_secret& secret;
  std::string member;                     // its serialized Member
  std::string caf_node;                   // to_string(its node())
  const node_certificate* tls = nullptr;  // with cluster TLS
};
// The gate's hello answer to `nonce`, checked: it must prove the secret and
// be member `expected` (as the record lists it: with cluster TLS, signed
// with its certificate's key) on CAF node `gate_node` (where the connection
// went). The PeerJoin to send; empty with *why when the gate is not that.
std::string answer_hello(const dialler& me, const std::string& nonce, const std::string& hello,
                         const member& expected, const std::string& gate_node, std::string* why);

}  // namespace tidings::cluster
