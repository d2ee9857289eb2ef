#include "cluster/source_host.hpp"

#include "cluster/wire.hpp"
#include "logging/log.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {
namespace {

using self_ptr = source_host_actor::stateful_pointer<source_host_state>;

std::string refusal(actors::watch_error_kind kind, const std::string& why) {
  proto::SourceSubReply r;
  r.set_error_kind(static_cast<int>(kind));
  r.set_error(why);
  return r.SerializeAsString();
}

caf::result<std::string> on_subscribe(self_ptr self, const std::string& bytes) {
  auto& st = self->state;
  proto::SourceSubRequest p;
  if (!parse(bytes, &p) || p.uri().empty())
    return refusal(actors::watch_error_kind::bad_request, "unreadable source subscription");
  // Its sources are moving to their new owners; so should this one.
  if (st.draining)
    return refusal(actors::watch_error_kind::unavailable, "the source's node is draining; retry");
  if (!st.sources) return refusal(actors::watch_error_kind::unavailable, "this node runs no sources");
  auto token = st.next_id++;
  auto rp = self->make_response_promise<std::string>();
  st.waiting.emplace(token, source_host_state::asking{p.requester(), rp});
  auto req = std::make_shared<actors::source_subscribe_request>();
  req->tenant = p.tenant();
  req->uri = p.uri();
  req->here = true;
  source_host_actor me = self;
  req->reply = [me, token](actors::source_subscribe_reply r) {
    caf::anon_send(me, srcdone_atom::value, token,
                   std::make_shared<actors::source_subscribe_reply>(std::move(r)));
  };
  self->send(st.sources, actors::source_sub_atom::value, req);
  return rp;
}

// The registry answered: the lease (if any) is kept under a new id, which
// the member names when it lets go. Dropped unkept, it unsubscribes.
void on_subscribed(self_ptr self, std::uint64_t token, const source_subscribe_reply_ptr& r) {
  auto& st = self->state;
  auto it = st.waiting.find(token);
  if (it == st.waiting.end()) return;
  auto asked = std::move(it->second);
  st.waiting.erase(it);
  if (r->error) {
    asked.reply.deliver(refusal(r->error->kind, r->error->message));
    return;
  }
  if (st.draining) {
    // Its source closes with the others (the lease goes with `r`).
    asked.reply.deliver(
        refusal(actors::watch_error_kind::unavailable, "the source's node is draining; retry"));
    return;
  }
  proto::SourceSubReply out;
  out.set_ok(true);
  out.set_stream(r->stream);
  out.set_key(r->key);
  out.set_shape(r->shape);
  if (r->lease) {
    auto id = st.next_id++;
    st.leases[id] = {asked.node, std::move(r->lease)};
    out.set_lease(id);
    logging::debug("cluster.source_leased", {{"node", asked.node}, {"stream", r->stream}, {"lease", id}});
  }
  asked.reply.deliver(out.SerializeAsString());
}

}  // namespace

source_host_actor::behavior_type source_host(source_host_actor::stateful_pointer<source_host_state> self,
                                             actors::source_registry_actor sources) {
  self->state.sources = std::move(sources);
  return {
      [self](srcsub_atom, const std::string& bytes) { return on_subscribe(self, bytes); },
      [self](srcdone_atom, std::uint64_t token, const source_subscribe_reply_ptr& r) {
        on_subscribed(self, token, r);
      },
      [self](srcunsub_atom, std::uint64_t lease) { self->state.leases.erase(lease); },
      [self](member_gone_atom, const std::string& node) {
        std::erase_if(self->state.leases, [&](const auto& entry) { return entry.second.node == node; });
      },
      [self](drain_atom) {
        // Leases held here for other members' sessions end with the
        // sources; the members subscribe again where the streams move.
        self->state.draining = true;
        self->state.leases.clear();
      },
  };
}

}  // namespace tidings::cluster
