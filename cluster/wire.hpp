#pragma once

// Conversions between the node's own types and proto/cluster.proto, which
// is all that crosses the middleman besides atoms and actor handles.

#include <string>
#include <vector>

#include "actors/messages.hpp"
#include "actors/watch_types.hpp"
#include "cluster/member_table.hpp"
#include "cluster/replica_append.hpp"
#include "cluster/stored_log.hpp"
#include "persistence/watch_records.hpp"
#include "proto/cluster.pb.h"

namespace tidings::cluster {

proto::Member to_proto(const member& m);
member from_proto(const proto::Member& m);
std::string encode_members(const std::vector<member>& members);
// False when `bytes` is not a Members message.
bool decode_members(const std::string& bytes, std::vector<member>* out);

void add_frame(proto::FeedPage& page, const actors::frame_ptr& f);
std::vector<actors::frame_ptr> frames_of(const proto::FeedPage& page);

// A publish as the owner's hub takes it; `reply` is left for the caller.
actors::publish_request_ptr publish_from_proto(const proto::PublishRequest& req);
proto::PublishReply to_proto(const actors::publish_result& r);
actors::publish_result from_proto(const proto::PublishReply& r);

proto::FeedPage::Status to_proto(actors::fetch_status s);

// A log's events and its epoch's Idempotency-Keys, as a take's answer
// (TakeReply) and an append to a follower (ReplicaAppend) carry them.
template <class Message>
void add_events(Message& m, const std::vector<persistence::stored_event>& events) {
  for (const auto& e : events) {
    auto* w = m.add_events();
    w->set_seq(e.seq);
    w->set_path(e.ev.path);
    w->set_type(e.ev.type);
    w->set_data_json(e.ev.data_json);
    w->set_time_ms(e.ev.time_ms);
  }
}
template <class Message>
void add_keys(Message& m, const std::vector<std::pair<std::string, persistence::idempotency_record>>& keys) {
  for (const auto& [key, rec] : keys) {
    auto* k = m.add_idempotency();
    k->set_key(key);
    k->set_first_seq(rec.first_seq);
    k->set_count(rec.count);
    k->set_time_ms(rec.time_ms);
  }
}

// A take's request and its answers (cluster/stored_log.hpp).
proto::TakeRequest to_proto(const take_request& r);
take_request from_proto(const proto::TakeRequest& r);
proto::TakeReply to_proto(const log_chunk& c);
// The meta (the receiver chooses the id), keys and events of `key`'s log
// as a TakeReply carries them; none for NONE or a status this build does
// not know.
log_chunk from_proto(proto::TakeReply&& r, const actors::stream_key& key);

// An append as the replica applies it (its strings moved out of `a`).
replica_append from_proto(proto::ReplicaAppend&& a);

// A watch's spec and position between members (a move, or the copies the
// others keep to restart it).
proto::WatchStart to_proto(const persistence::watch_spec& spec);
persistence::watch_spec spec_of(const proto::WatchStart& p);
proto::WatchProgress to_proto(const persistence::watch_progress& progress);
persistence::watch_progress progress_of(const proto::WatchProgress& p);
// One row of a member's watch list, as `node` runs it.
proto::WatchInfo to_proto(const actors::watch_info& w, const std::string& node);

// A string with its parse checked: garbage from a peer is an error, never
// a default-constructed message.
template <class Message>
bool parse(const std::string& bytes, Message* out) {
  return out->ParseFromString(bytes);
}

}  // namespace tidings::cluster
