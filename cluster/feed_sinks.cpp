#include "cluster/feed_sinks.hpp"

#include "cluster/atoms.hpp"
#include "cluster/wire.hpp"

namespace tidings::cluster {
namespace {

proto::FeedPage page_of(const actors::stream_key& stream, const actors::fetch_reply& reply) {
  proto::FeedPage page;
  page.set_tenant(stream.tenant);
  page.set_stream(stream.name);
  page.set_status(to_proto(reply.status));
  page.set_epoch(reply.epoch);
  page.set_head_epoch(reply.head.epoch);
  page.set_head_seq(reply.head.seq);
  page.set_reason(reply.reason);
  for (auto& f : reply.frames) add_frame(page, f);
  return page;
}

}  // namespace

void remote_feed::deliver(actors::frame_batch_ptr batch) {
  proto::FeedPage page;
  page.set_tenant(batch->stream.tenant);
  page.set_stream(batch->stream.name);
  page.set_status(proto::FeedPage::LIVE);
  page.set_epoch(batch->epoch);
  for (auto& f : batch->frames) add_frame(page, f);
  caf::anon_send(relay_, page_atom::value, page.SerializeAsString());
}

void remote_feed::fetched(actors::stream_key stream, actors::fetch_reply reply) {
  caf::anon_send(relay_, page_atom::value, page_of(stream, reply).SerializeAsString());
}

void remote_feed::moved(actors::stream_key stream, caf::actor_addr) {
  proto::FeedPage page;
  page.set_tenant(stream.tenant);
  page.set_stream(stream.name);
  page.set_status(proto::FeedPage::RESYNC);
  page.set_reason("moved");
  caf::anon_send(relay_, page_atom::value, page.SerializeAsString());
}

void one_fetch::fetched(actors::stream_key stream, actors::fetch_reply reply) {
  if (reply.registered)
    caf::anon_send(caf::actor_cast<actors::stream_actor>(reply.registered_at), actors::unsub_atom::value,
                   actors::fanout_sink_ptr(shared_from_this()));
  caf::anon_send(node_, done_atom::value, token_, page_of(stream, reply).SerializeAsString());
}

}  // namespace tidings::cluster
