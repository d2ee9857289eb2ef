#include "cluster/peer_gate.hpp"

#include "cluster/wire.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

using self_ptr = peer_gate_actor::stateful_pointer<peer_gate_state>;

constexpr std::string_view gate_role = "tidings/peer-gate/v1";
constexpr std::string_view dialler_role = "tidings/peer-dialler/v1";

std::string sender_node(self_ptr self) {
  auto sender = self->current_sender();
  return sender ? to_string(sender->node()) : std::string();
}

void forget_old(peer_gate_state& st, caf::actor_clock::time_point now) {
  while (!st.order.empty()) {
    auto it = st.pending.find(st.order.front());
    bool expired = it == st.pending.end() || now - it->second.at >= st.cfg.hello_ttl;
    if (!expired && st.order.size() <= st.cfg.max_pending) break;
    if (it != st.pending.end()) st.pending.erase(it);
    st.order.pop_front();
  }
}

caf::error refuse(self_ptr self, const std::string& why) {
  auto& st = self->state;
  auto now = self->clock().now();
  if (now - st.refusals_logged >= std::chrono::seconds(10)) {
    logging::warn(
        "cluster.peer_refused",
        {{"from", sender_node(self)}, {"reason", why}, {"refused_before_unlogged", st.refusals_unlogged}});
    st.refusals_logged = now;
    st.refusals_unlogged = 0;
  } else {
    ++st.refusals_unlogged;
  }
  return caf::make_error(caf::sec::runtime_error, "join refused: " + why);
}

caf::result<std::string> on_hello(self_ptr self, const std::string& dialler_nonce) {
  auto& st = self->state;
  if (dialler_nonce.size() != nonce_bytes) return refuse(self, "a hello without a proper nonce");
  proto::PeerHello h;
  auto now = self->clock().now();
  h.set_nonce(make_nonce());
  h.set_member_id(st.cfg.member_id);
  h.set_caf_node(to_string(self->node()));
  h.set_proof(st.cfg.secret->prove(gate_role, {dialler_nonce, h.nonce(), h.member_id(), h.caf_node()}));
  if (st.cfg.tls)
    h.set_signature(st.cfg.tls->sign(gate_role, {dialler_nonce, h.nonce(), h.member_id(), h.caf_node()}));
  st.pending[h.nonce()] = {dialler_nonce, now};
  st.order.push_back(h.nonce());
  forget_old(st, now);
  return h.SerializeAsString();
}

caf::result<caf::actor, std::string> on_join(self_ptr self, const caf::actor& peer,
                                             const std::string& bytes) {
  auto& st = self->state;
  forget_old(st, self->clock().now());
  proto::PeerJoin j;
  auto it = parse(bytes, &j) ? st.pending.find(j.nonce()) : st.pending.end();
  if (it == st.pending.end())
    return refuse(self, "no hello of this gate to answer (unknown or expired nonce)");
  auto dialler_nonce = std::move(it->second.dialler_nonce);
  st.pending.erase(it);  // one join per nonce: a replayed one finds nothing
  if (!st.cfg.secret->verify(dialler_role,
                             {j.nonce(), dialler_nonce, j.member(), j.target_id(), j.caf_node()}, j.proof()))
    return refuse(self, "it did not prove it holds the cluster secret");
  // The proof names who proved it to whom: a relay is neither.
  if (j.target_id() != st.cfg.member_id)
    return refuse(self, "its proof was meant for member " + j.target_id());
  if (!peer || j.caf_node() != sender_node(self) || j.caf_node() != to_string(peer->node()))
    return refuse(self, "its proof came from another process than the one that made it");
  // The node takes the join only when the record lists this certificate.
  proto::Member m;
  if (st.cfg.tls &&
      (!parse(j.member(), &m) ||
       !signed_by(m.certificate(), dialler_role,
                  {j.nonce(), dialler_nonce, j.member(), j.target_id(), j.caf_node()}, j.signature())))
    return refuse(self, "its join is not signed with the key of the certificate in its member record");
  auto rp = self->make_response_promise<caf::actor, std::string>();
  self->request(st.cfg.node, std::chrono::seconds(5), join_atom::value, peer, j.member())
      .then([rp](const caf::actor& node, const std::string& members) mutable { rp.deliver(node, members); },
            [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

}  // namespace

peer_gate_actor::behavior_type peer_gate(self_ptr self, peer_gate_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
      [self](hello_atom, const std::string& nonce) { return on_hello(self, nonce); },
      [self](join_atom, const caf::actor& peer, const std::string& bytes) {
        return on_join(self, peer, bytes);
      },
  };
}

std::string answer_hello(const dialler& me, const std::string& nonce, const std::string& hello,
                         const member& expected, const std::string& gate_node, std::string* why) {
  const auto& expected_id = expected.id;
  proto::PeerHello h;
  if (!h.ParseFromString(hello) || h.nonce().size() != nonce_bytes ||
      !me.secret.verify(gate_role, {nonce, h.nonce(), h.member_id(), h.caf_node()}, h.proof())) {
    *why = "the process there did not prove it holds the cluster secret";
    return {};
  }
  if (h.member_id() != expected_id || h.caf_node() != gate_node) {
    *why = "the gate that answered is member " + h.member_id() + ", not " + expected_id +
           " at the address dialled (a relay, or a member's address reused)";
    return {};
  }
  if (me.tls && !signed_by(expected.certificate, gate_role, {nonce, h.nonce(), h.member_id(), h.caf_node()},
                           h.signature())) {
    *why = "the gate's hello is not signed with the key of the certificate in member " + expected_id +
           "'s record";
    return {};
  }
  proto::PeerJoin j;
  j.set_member(me.member);
  j.set_nonce(h.nonce());
  j.set_target_id(expected_id);
  j.set_caf_node(me.caf_node);
  j.set_proof(me.secret.prove(dialler_role, {h.nonce(), nonce, j.member(), j.target_id(), j.caf_node()}));
  if (me.tls)
    j.set_signature(me.tls->sign(dialler_role, {h.nonce(), nonce, j.member(), j.target_id(), j.caf_node()}));
  return j.SerializeAsString();
}

}  // namespace tidings::cluster
