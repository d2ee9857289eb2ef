#include "cluster/wire.hpp"

namespace tidings::cluster {

proto::Member to_proto(const member& m) {
  proto::Member p;
  p.set_id(m.id);
  p.set_cluster_address(m.cluster_address);
  p.set_http_address(m.http_address);
  p.set_incarnation(m.incarnation);
  p.set_draining(m.draining);
  p.set_certificate(m.certificate);
  return p;
}

member from_proto(const proto::Member& p) {
  return {p.id(), p.cluster_address(), p.http_address(), p.incarnation(), p.draining(), p.certificate()};
}

std::string encode_members(const std::vector<member>& members) {
  proto::Members p;
  for (auto& m : members) *p.add_members() = to_proto(m);
  return p.SerializeAsString();
}

bool decode_members(const std::string& bytes, std::vector<member>* out) {
  proto::Members p;
  if (!p.ParseFromString(bytes)) return false;
  for (auto& m : p.members()) out->push_back(from_proto(m));
  return true;
}

void add_frame(proto::FeedPage& page, const actors::frame_ptr& f) {
  auto* w = page.add_frames();
  w->set_seq(f->seq);
  w->set_path(f->path);
  w->set_bytes(f->bytes);
  w->set_body_offset(static_cast<std::uint32_t>(f->body_offset));
}

std::vector<actors::frame_ptr> frames_of(const proto::FeedPage& page) {
  std::vector<actors::frame_ptr> out;
  out.reserve(static_cast<std::size_t>(page.frames_size()));
  for (auto& w : page.frames()) {
    core::sse_frame f;
    f.seq = w.seq();
    f.path = w.path();
    f.bytes = w.bytes();
    f.body_offset = std::min<std::size_t>(w.body_offset(), f.bytes.size());
    out.push_back(std::make_shared<const core::sse_frame>(std::move(f)));
  }
  return out;
}

actors::publish_request_ptr publish_from_proto(const proto::PublishRequest& req) {
  auto out = std::make_shared<actors::publish_request>();
  out->idempotency_key = req.idempotency_key();
  out->events.reserve(static_cast<std::size_t>(req.events_size()));
  for (auto& e : req.events()) {
    core::event ev;
    ev.path = e.path();
    ev.type = e.type();
    ev.data_json = e.data_json();
    out->events.push_back(std::move(ev));
  }
  return out;
}

proto::PublishReply to_proto(const actors::publish_result& r) {
  proto::PublishReply p;
  switch (r.outcome) {
    case actors::publish_outcome::appended:
      p.set_outcome(proto::PublishReply::APPENDED);
      break;
    case actors::publish_outcome::replayed:
      p.set_outcome(proto::PublishReply::REPLAYED);
      break;
    case actors::publish_outcome::unavailable:
      p.set_outcome(proto::PublishReply::UNAVAILABLE);
      break;
    case actors::publish_outcome::uncertain:
      p.set_outcome(proto::PublishReply::UNCERTAIN);
      break;
    case actors::publish_outcome::storage_full:
      p.set_outcome(proto::PublishReply::STORAGE_FULL);
      break;
  }
  if (!r.cursors.empty()) p.set_epoch(r.cursors.front().epoch);
  for (auto& c : r.cursors) p.add_seqs(c.seq);
  p.set_error(r.error);
  return p;
}

actors::publish_result from_proto(const proto::PublishReply& p) {
  actors::publish_result r;
  switch (p.outcome()) {
    case proto::PublishReply::APPENDED:
      r.outcome = actors::publish_outcome::appended;
      break;
    case proto::PublishReply::REPLAYED:
      r.outcome = actors::publish_outcome::replayed;
      break;
    case proto::PublishReply::UNCERTAIN:
      r.outcome = actors::publish_outcome::uncertain;
      break;
    case proto::PublishReply::STORAGE_FULL:
      r.outcome = actors::publish_outcome::storage_full;
      break;
    default:
      r.outcome = actors::publish_outcome::unavailable;
      break;
  }
  for (auto seq : p.seqs()) r.cursors.push_back({p.epoch(), seq});
  r.error = p.error();
  return r;
}

namespace {

persistence::stream_meta meta_of(const proto::TakeReply& r, const actors::stream_key& key) {
  persistence::stream_meta m;
  m.tenant = key.tenant;
  m.name = key.name;
  m.epoch = r.epoch();
  m.first_seq = r.first_seq();
  m.head_seq = r.head_seq();
  m.retention_count = r.retention_count();
  m.retention_age_ms = r.retention_age_ms();
  m.created_ms = r.created_ms();
  m.term = r.term();
  m.term_owner = r.term_owner();
  return m;
}

// The counterparts of add_events and add_keys: a TakeReply's or a
// ReplicaAppend's events and keys, their strings moved out of `m`.
template <class Message>
std::vector<persistence::stored_event> take_events(Message& m) {
  std::vector<persistence::stored_event> out;
  out.reserve(static_cast<std::size_t>(m.events_size()));
  for (auto& e : *m.mutable_events())
    out.push_back({e.seq(), core::event{std::move(*e.mutable_path()), std::move(*e.mutable_type()),
                                        std::move(*e.mutable_data_json()), e.time_ms()}});
  return out;
}

template <class Message>
std::vector<std::pair<std::string, persistence::idempotency_record>> take_keys(Message& m) {
  std::vector<std::pair<std::string, persistence::idempotency_record>> out;
  out.reserve(static_cast<std::size_t>(m.idempotency_size()));
  for (auto& k : *m.mutable_idempotency())
    out.emplace_back(std::move(*k.mutable_key()),
                     persistence::idempotency_record{m.epoch(), k.first_seq(), k.count(), k.time_ms()});
  return out;
}

}  // namespace

proto::TakeRequest to_proto(const take_request& r) {
  proto::TakeRequest p;
  p.set_tenant(r.stream.tenant);
  p.set_stream(r.stream.name);
  p.set_requester(r.requester);
  p.set_after_seq(r.after_seq);
  p.set_by_record(r.by_record);
  return p;
}

take_request from_proto(const proto::TakeRequest& r) {
  return {{r.tenant(), r.stream()}, r.requester(), r.after_seq(), r.by_record()};
}

proto::TakeReply to_proto(const log_chunk& c) {
  proto::TakeReply r;
  switch (c.status) {
    case log_chunk::kind::none:
      r.set_status(proto::TakeReply::NONE);
      return r;
    case log_chunk::kind::retry:
      r.set_status(proto::TakeReply::RETRY);
      break;
    case log_chunk::kind::log:
      r.set_status(proto::TakeReply::LOG);
      break;
  }
  r.set_epoch(c.meta.epoch);
  r.set_first_seq(c.meta.first_seq);
  r.set_head_seq(c.meta.head_seq);
  r.set_retention_count(c.meta.retention_count);
  r.set_retention_age_ms(c.meta.retention_age_ms);
  r.set_created_ms(c.meta.created_ms);
  r.set_term(c.meta.term);
  r.set_term_owner(c.meta.term_owner);
  add_keys(r, c.idempotency);
  add_events(r, c.events);
  r.set_more(c.more);
  return r;
}

log_chunk from_proto(proto::TakeReply&& r, const actors::stream_key& key) {
  log_chunk c;
  switch (r.status()) {
    case proto::TakeReply::LOG:
      c.status = log_chunk::kind::log;
      break;
    case proto::TakeReply::RETRY:
      c.status = log_chunk::kind::retry;
      break;
    default:  // NONE, or a newer member's status this build does not know: no log
      return c;
  }
  c.meta = meta_of(r, key);
  c.idempotency = take_keys(r);
  c.events = take_events(r);
  c.more = r.more();
  return c;
}

replica_append from_proto(proto::ReplicaAppend&& a) {
  replica_append out;
  out.stream = {std::move(*a.mutable_tenant()), std::move(*a.mutable_stream())};
  out.owner = std::move(*a.mutable_owner());
  out.term = a.term();
  out.epoch = a.epoch();
  out.prev_seq = a.prev_seq();
  out.events = take_events(a);
  out.first_seq = a.first_seq();
  out.retention_count = a.retention_count();
  out.retention_age_ms = a.retention_age_ms();
  out.created_ms = a.created_ms();
  out.idempotency = take_keys(a);
  out.synced = a.synced();
  out.reset = a.reset();
  out.base_term = a.base_term();
  out.base_owner = std::move(*a.mutable_base_owner());
  out.base_head = a.base_head();
  return out;
}

proto::FeedPage::Status to_proto(actors::fetch_status s) {
  switch (s) {
    case actors::fetch_status::page:
      return proto::FeedPage::PAGE;
    case actors::fetch_status::caught_up:
      return proto::FeedPage::CAUGHT_UP;
    case actors::fetch_status::resync:
      return proto::FeedPage::RESYNC;
  }
  return proto::FeedPage::RESYNC;
}

proto::WatchStart to_proto(const persistence::watch_spec& spec) {
  proto::WatchStart p;
  p.set_tenant(spec.id.tenant);
  p.set_name(spec.id.name);
  p.set_uri(spec.uri);
  p.set_has_on_event(spec.on_event.has_value());
  if (spec.on_event) p.set_on_event(*spec.on_event);
  p.set_debounce_ms(spec.debounce_ms);
  p.set_max_wait_ms(spec.max_wait_ms);
  p.set_created_ms(spec.created_ms);
  return p;
}

persistence::watch_spec spec_of(const proto::WatchStart& p) {
  persistence::watch_spec spec;
  spec.id = {p.tenant(), p.name()};
  spec.uri = p.uri();
  if (p.has_on_event()) spec.on_event = p.on_event();
  spec.debounce_ms = p.debounce_ms();
  spec.max_wait_ms = p.max_wait_ms();
  spec.created_ms = p.created_ms();
  return spec;
}

proto::WatchProgress to_proto(const persistence::watch_progress& progress) {
  proto::WatchProgress p;
  p.set_stream(progress.stream);
  p.set_epoch(progress.cursor.epoch);
  p.set_seq(progress.cursor.seq);
  p.set_shape(progress.shape);
  for (const auto& path : progress.paths) {
    auto* out = p.add_paths();
    out->set_path(path.path);
    auto* state = out->mutable_state();
    state->set_shape(path.shape);
    state->set_state_json(path.state_json);
    state->set_has_last_seq(path.last_seq.has_value());
    if (path.last_seq) state->set_last_seq(*path.last_seq);
  }
  return p;
}

persistence::watch_progress progress_of(const proto::WatchProgress& p) {
  persistence::watch_progress progress;
  progress.stream = p.stream();
  progress.cursor = {p.epoch(), p.seq()};
  progress.shape = p.shape();
  for (const auto& path : p.paths()) {
    persistence::path_state out;
    out.path = path.path();
    out.shape = path.state().shape();
    out.state_json = path.state().state_json();
    if (path.state().has_last_seq()) out.last_seq = path.state().last_seq();
    progress.paths.push_back(std::move(out));
  }
  return progress;
}

proto::WatchInfo to_proto(const actors::watch_info& w, const std::string& node) {
  proto::WatchInfo p;
  p.set_name(w.name);
  p.set_uri(w.uri);
  p.set_shape(w.shape);
  p.set_events(w.events);
  p.set_notices(w.notices);
  p.set_filter_errors(w.filter_errors);
  p.set_state(w.state);
  p.set_restore_failed(w.restore_failed);
  p.set_error(w.error);
  p.set_node(node);
  return p;
}

}  // namespace tidings::cluster
