// Sources other members place on this node: a source runs on the owner of
// the stream it feeds, so there is one upstream subscription per source key
// in the whole cluster. The requester's sessions read that stream through
// their node's relay; this node holds a lease per requesting subscription
// and drops it when the requester lets go or is lost.

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {

caf::result<std::string> on_source_subscribe(node_actor* self, const std::string& bytes) {
  auto& st = self->state;
  proto::SourceSubRequest p;
  if (!parse(bytes, &p) || p.uri().empty()) {
    proto::SourceSubReply r;
    r.set_error_kind(static_cast<int>(actors::watch_error_kind::bad_request));
    r.set_error("unreadable source subscription");
    return r.SerializeAsString();
  }
  if (st.draining) {
    // Its sources are moving to their new owners; so should this one.
    proto::SourceSubReply r;
    r.set_error_kind(static_cast<int>(actors::watch_error_kind::unavailable));
    r.set_error("the source's node is draining; retry");
    return r.SerializeAsString();
  }
  auto token = st.next_token++;
  st.promises.emplace(token, self->make_response_promise());
  auto req = std::make_shared<actors::source_subscribe_request>();
  req->tenant = p.tenant();
  req->uri = p.uri();
  req->here = true;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  req->reply = [me, token, node = p.requester()](actors::source_subscribe_reply r) {
    proto::SourceSubReply out;
    if (r.error) {
      out.set_error_kind(static_cast<int>(r.error->kind));
      out.set_error(r.error->message);
    } else {
      out.set_ok(true);
      out.set_stream(r.stream);
      out.set_key(r.key);
      out.set_shape(r.shape);
    }
    caf::anon_send(me, srcdone_atom::value, token, r.lease, node, out.SerializeAsString());
  };
  self->send(st.cfg.sources, actors::source_sub_atom::value, req);
  return caf::delegated<std::string>();
}

void on_source_subscribed(node_actor* self, std::uint64_t token, const actors::source_lease_ptr& lease,
                          const std::string& node, const std::string& reply) {
  auto& st = self->state;
  auto it = st.promises.find(token);
  if (it == st.promises.end()) return;  // (the lease, if any, goes with this message)
  proto::SourceSubReply out;
  if (!parse(reply, &out)) out.set_ok(false);
  if (out.ok() && st.draining) {
    // Its source closes with the others (the lease goes with this message).
    out.Clear();
    out.set_error_kind(static_cast<int>(actors::watch_error_kind::unavailable));
    out.set_error("the source's node is draining; retry");
  }
  if (out.ok() && lease) {
    auto id = st.next_token++;
    st.leases[id] = {node, lease};
    out.set_lease(id);
    logging::debug("cluster.source_leased", {{"node", node}, {"stream", out.stream()}, {"lease", id}});
  }
  it->second.deliver(out.SerializeAsString());
  st.promises.erase(it);
}

void drop_leases_of(node_actor* self, const std::string& node) {
  auto& leases = self->state.leases;
  std::erase_if(leases, [&](const auto& entry) { return entry.second.node == node; });
}

}  // namespace tidings::cluster
