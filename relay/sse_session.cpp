#include "relay/sse_session.hpp"

#include <algorithm>
#include <boost/asio/write.hpp>
#include <cstdio>

#include "core/cursor_vector.hpp"
#include "core/json_text.hpp"
#include "core/sse_frame.hpp"
#include "relay/io_shard.hpp"
#include "relay/tls_connection.hpp"

namespace tidings::relay {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

constexpr std::string_view response_header =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/event-stream\r\n"
    "Cache-Control: no-cache\r\n"
    "X-Accel-Buffering: no\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Transfer-Encoding: chunked\r\n";

std::string resync_json(const std::string& stream, std::string_view reason, core::cursor head,
                        const std::string& resume_id) {
  std::string j = "{\"stream\":";
  core::append_json_string(j, stream);
  j += ",\"reason\":";
  core::append_json_string(j, reason);
  j += ",\"head\":\"" + core::format_cursor(head) + "\"";
  if (!resume_id.empty()) j += ",\"cursor\":\"" + resume_id + "\"";
  j += "}";
  return j;
}

}  // namespace

sse_session::sse_session(io_shard& shard, net::ip::tcp::socket socket, sse_request request,
                         const sse_options& options)
    : shard_(shard),
      socket_(std::move(socket)),
      heartbeat_(shard.context()),
      request_(std::move(request)),
      options_(options) {}

sse_session::sse_session(io_shard& shard, std::unique_ptr<tls_connection> tls, sse_request request,
                         const sse_options& options)
    : shard_(shard),
      socket_(shard.context()),
      tls_(std::move(tls)),
      heartbeat_(shard.context()),
      request_(std::move(request)),
      options_(options) {}

sse_session::~sse_session() = default;

net::ip::tcp::socket& sse_session::tcp_socket() {
  return tls_ ? tls_->stream.socket() : socket_;
}

const net::ip::tcp::socket& sse_session::tcp_socket() const {
  return tls_ ? tls_->stream.socket() : socket_;
}

void sse_session::start() {
  id_ = shard_.add_session(shared_from_this());
  if (auto* m = shard_.metrics()) m->session_opened();
  error_code ec;
  // Plain sockets are read without blocking when readable (wait_readable).
  if (!tls_) socket_.non_blocking(true, ec);
  tcp_socket().set_option(net::ip::tcp::no_delay(true), ec);
  for (std::size_t i = 0; i < request_.streams.size(); ++i) {
    subscription s;
    s.key = {request_.tenant, request_.streams[i].stream};
    s.prefix = request_.streams[i].prefix;
    s.check_each = request_.guard && !request_.guard->admits_all(i);
    s.hub = shard_.hubs().get(s.key);
    if (request_.resume) s.position = (*request_.resume)[i];
    subs_.push_back(std::move(s));
  }
  probes_left_ = subs_.size();
  preamble_ = std::string(response_header) + request_.extra_headers + "\r\n";
  enqueue_control(core::sse_retry(options_.retry_ms));
  for (std::size_t i = 0; i < subs_.size(); ++i) {
    auto req = std::make_shared<actors::fetch_request>();
    req->subscription = io_shard::subscription_id(id_, i);
    req->sink = shard_.shared_from_this();
    if (request_.resume) req->after = subs_[i].position;
    req->probe = true;
    caf::anon_send(subs_[i].hub, actors::fetch_atom::value, std::move(req));
  }
  wait_readable();
  wait_expiry();
  // The credential may have been revoked while the session waited to start
  // (a uri= source's first read); from here on recheck_sessions reaches it.
  if (request_.guard)
    if (auto reason = request_.guard->recheck()) end_unauthorized(*reason);
  do_write();
}

// At `exp` itself, not at the next event: a quiet stream must not keep an
// expired token's session open.
void sse_session::wait_expiry() {
  if (!request_.guard) return;
  auto at = request_.guard->expires_at();
  if (at == std::chrono::system_clock::time_point::max()) return;
  auto left = at - std::chrono::system_clock::now();
  expiry_ = std::make_unique<timer>(shard_.context());
  expiry_->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(left));
  expiry_->async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec) self->end_unauthorized({"expired", "token expired"});
  });
}

void sse_session::recheck_auth() {
  if (!request_.guard || terminating_ || closed_) return;
  if (auto lapse = request_.guard->recheck()) end_unauthorized(*lapse);
}

void sse_session::end_unauthorized(const auth_lapse& lapse) {
  if (terminating_ || closed_) return;
  if (auto* m = shard_.metrics()) m->unauthorized(lapse.kind);
  std::string j = "{\"reason\":";
  core::append_json_string(j, lapse.reason);
  j += "}";
  terminate(core::sse_event("", "unauthorized", j));
}

void sse_session::end_resync(const std::string& stream, std::string_view reason, core::cursor head,
                             const std::string& resume_id) {
  if (terminating_ || closed_) return;
  if (auto* m = shard_.metrics()) m->resync(reason);
  terminate(core::sse_event("", "resync", resync_json(stream, reason, head, resume_id)));
}

void sse_session::fetch(std::size_t index) {
  auto& sub = subs_[index];
  sub.state = sub_state::fetching;
  sub.hub = shard_.hubs().get(sub.key);  // a relay or another hub after a move
  auto req = std::make_shared<actors::fetch_request>();
  req->subscription = io_shard::subscription_id(id_, index);
  req->sink = shard_.shared_from_this();
  req->after = sub.position;
  // Ask for no more than half the free room, so a page never overflows the
  // queue on its own.
  // (Control frames and one oversized event may take the queue past its
  // limits, hence the saturating differences.)
  auto free_frames = options_.queue_frames - std::min(options_.queue_frames, queue_.size());
  auto free_bytes = options_.queue_bytes - std::min(options_.queue_bytes, queued_bytes_);
  req->max_frames = std::clamp<std::size_t>(free_frames / 2, 1, options_.page_frames);
  req->max_bytes = std::max<std::size_t>(free_bytes / 2, 1);
  caf::anon_send(sub.hub, actors::fetch_atom::value, std::move(req));
}

void sse_session::on_fetched(std::size_t index, const actors::fetch_reply& reply) {
  if (index >= subs_.size()) return;
  auto& sub = subs_[index];
  if (terminating_ || closed_ || sub.state == sub_state::ended) {
    if (reply.registered)
      caf::anon_send(sub.hub, actors::unsub_atom::value, actors::fanout_sink_ptr(shard_.shared_from_this()));
    return;
  }
  if (reply.registered) sub.hub = caf::actor_cast<actors::stream_actor>(reply.registered_at);
  if (reply.status == actors::fetch_status::resync) {
    bool lost = reply.reason == "unknown_stream" || reply.reason == "epoch_changed";
    end_resync(sub.key.name, sub.moved && lost ? "owner_changed" : reply.reason, reply.head, {});
    return;
  }
  if (sub.state != sub_state::probing) sub.moved = false;
  if (sub.state == sub_state::probing) {
    if (!request_.resume) sub.position = reply.head;
    heads_.resize(subs_.size());
    heads_[index] = reply.head;
    sub.state = sub_state::waiting_room;
    if (--probes_left_ == 0) {
      write_hello();
      start_id_ = current_id();
      fetch_next();
      wait_heartbeat();
    }
    do_write();
    return;
  }
  fetch_in_flight_ = false;
  for (auto& f : reply.frames) {
    accept_frame(index, reply.epoch, f);
    if (terminating_) break;
  }
  if (terminating_) {
    if (reply.registered)
      caf::anon_send(sub.hub, actors::unsub_atom::value, actors::fanout_sink_ptr(shard_.shared_from_this()));
  } else if (reply.registered) {
    sub.state = sub_state::live;
    shard_.add_live(sub.key, this, id_, index);
  } else {
    sub.state = sub_state::waiting_room;
  }
  fetch_next();
  do_write();
}

// One page in flight per session: each is sized from the free queue room,
// and two outstanding pages would each count the same room.
void sse_session::fetch_next() {
  if (fetch_in_flight_ || terminating_ || closed_ || probes_left_ > 0 || !has_room()) return;
  for (std::size_t n = 0; n < subs_.size(); ++n) {
    auto i = (next_fetch_ + n) % subs_.size();
    if (subs_[i].state == sub_state::waiting_room) {
      next_fetch_ = i + 1;  // round robin, so no stream starves the others
      fetch_in_flight_ = true;
      fetch(i);
      return;
    }
  }
}

void sse_session::on_frames(std::size_t index, const actors::frame_batch& batch) {
  if (index >= subs_.size() || subs_[index].state != sub_state::live) return;
  for (auto& f : batch.frames) {
    accept_frame(index, batch.epoch, f, batch.durable_at);
    if (terminating_) break;
  }
  flush_soon();
}

void sse_session::on_moved(std::size_t index, const caf::actor_addr& from) {
  if (index >= subs_.size() || terminating_ || closed_) return;
  auto& sub = subs_[index];
  if (sub.state != sub_state::live || sub.hub.address() != from) return;
  shard_.remove_live(sub.key, id_, index);
  sub.state = sub_state::waiting_room;
  sub.moved = true;
  fetch_next();
  do_write();
}

// Writes are never made inside a delivery: the shard runs them in passes of
// a few sessions, so a publisher's ack posted to this thread is not stuck
// behind a thousand writes, and a busy session collects several events per
// write.
void sse_session::flush_soon() {
  if (write_in_flight_ || flush_deferred_ || closed_ || queue_.empty()) return;
  flush_deferred_ = true;
  shard_.defer_flush(shared_from_this(), last_write_ + options_.coalesce);
}

void sse_session::flush_deferred() {
  flush_deferred_ = false;
  do_write();
}

void sse_session::accept_frame(std::size_t index, std::uint64_t epoch, const actors::frame_ptr& f,
                               std::chrono::steady_clock::time_point durable_at) {
  auto& sub = subs_[index];
  if (sub.position.epoch == 0) sub.position.epoch = epoch;  // the stream was created since
  if (f->seq <= sub.position.seq) return;                   // already delivered
  sub.position.seq = f->seq;
  if (!sub.prefix.empty() && !std::string_view(f->path).starts_with(sub.prefix)) return;
  if (sub.check_each && !request_.guard->admits(index, sub.key.name, *f)) return;
  if (subs_.size() == 1) {
    enqueue({f, {}, index, 0, durable_at}, f->bytes.size());
  } else {
    std::string id_line = "id: " + current_id() + "\n";
    auto bytes = id_line.size() + f->body().size();
    enqueue({f, std::move(id_line), index, 0, durable_at}, bytes);
  }
}

bool sse_session::has_room() const {
  return queue_.size() < options_.queue_frames / 2 && queued_bytes_ < options_.queue_bytes / 2;
}

void sse_session::enqueue(out_item item, std::size_t bytes) {
  if (terminating_) return;
  // An empty queue takes any one frame, so a single large event is never
  // mistaken for a slow reader.
  if (!queue_.empty() &&
      (queue_.size() + 1 > options_.queue_frames || queued_bytes_ + bytes > options_.queue_bytes)) {
    auto& sub = subs_[item.index];
    end_resync(sub.key.name, "slow_consumer", {sub.position.epoch, item.frame->seq}, last_delivered_id());
    return;
  }
  queued_bytes_ += bytes;
  item.bytes = bytes;
  queue_.push_back(std::move(item));
}

void sse_session::enqueue_control(std::string frame) {
  auto bytes = frame.size();
  queued_bytes_ += bytes;
  queue_.push_back({nullptr, std::move(frame), 0, bytes, {}});
}

std::string sse_session::id_of(const out_item& item) const {
  if (!item.frame) return {};
  if (!item.text.empty()) return item.text.substr(4, item.text.size() - 5);  // "id: X\n"
  return core::format_cursor({subs_[0].position.epoch, item.frame->seq});
}

std::string sse_session::last_delivered_id() const {
  for (auto it = writing_.rbegin(); it != writing_.rend(); ++it)
    if (it->frame) return id_of(*it);
  // Nothing written yet: the position the session started from.
  return last_written_.frame ? id_of(last_written_) : start_id_;
}

void sse_session::write_hello() {
  std::string j = "{\"streams\":{";
  for (std::size_t i = 0; i < subs_.size(); ++i) {
    if (i) j += ',';
    core::append_json_string(j, subs_[i].key.name);
    j += ":\"" + core::format_cursor(heads_[i]) + "\"";
  }
  j += "},\"heartbeat_ms\":" + std::to_string(options_.heartbeat.count()) + "}";
  enqueue_control(core::sse_event("", "hello", j));
}

std::string sse_session::current_id() const {
  std::vector<core::cursor> positions;
  positions.reserve(subs_.size());
  for (auto& s : subs_) positions.push_back(s.position);
  return core::encode_cursor_vector(positions);
}

void sse_session::do_write() {
  if (write_in_flight_ || closed_) return;
  if (queue_.empty()) {
    if (terminating_) close();
    return;
  }
  buffers_.clear();
  if (!preamble_.empty()) buffers_.push_back(net::buffer(preamble_));
  buffers_.push_back({});  // the chunk size line, filled in below
  std::size_t total = 0;
  std::size_t events = 0;
  std::chrono::steady_clock::time_point oldest_live{};
  // Coalesce what is pending into one chunk and one write.
  while (!queue_.empty() && (writing_.empty() || total < options_.write_bytes) && buffers_.size() < 512) {
    writing_.push_back(std::move(queue_.front()));
    queue_.pop_front();
    auto& item = writing_.back();
    queued_bytes_ -= item.bytes;
    total += item.bytes;
    if (item.frame) ++events;
    if (item.durable_at != std::chrono::steady_clock::time_point{} &&
        (oldest_live == std::chrono::steady_clock::time_point{} || item.durable_at < oldest_live))
      oldest_live = item.durable_at;
    if (!item.frame) {
      buffers_.push_back(net::buffer(item.text));
    } else if (item.text.empty()) {
      buffers_.push_back(net::buffer(item.frame->bytes));
    } else {
      buffers_.push_back(net::buffer(item.text));
      auto body = item.frame->body();
      buffers_.push_back(net::buffer(body.data(), body.size()));
    }
  }
  char head[24];
  int n = std::snprintf(head, sizeof head, "%zx\r\n", total);
  chunk_head_.assign(head, static_cast<std::size_t>(n));
  buffers_[preamble_.empty() ? 0 : 1] = net::buffer(chunk_head_);
  // The last chunk of a terminated stream also carries the end of the body.
  bool last = terminating_ && queue_.empty();
  buffers_.push_back(net::buffer(last ? std::string_view("\r\n0\r\n\r\n") : std::string_view("\r\n")));
  write_in_flight_ = true;
  last_write_ = std::chrono::steady_clock::now();
  if (auto* m = shard_.metrics(); m && events > 0) {
    m->delivered(events);
    if (oldest_live != std::chrono::steady_clock::time_point{}) m->delivery_lag(last_write_ - oldest_live);
  }
  auto done = [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_write(ec); };
  if (tls_)
    net::async_write(tls_->stream, buffers_, std::move(done));
  else
    net::async_write(socket_, buffers_, std::move(done));
}

void sse_session::on_write(const error_code& ec) {
  write_in_flight_ = false;
  std::string().swap(preamble_);  // written once; its memory is not kept
  if (ec) return close();
  wrote_since_heartbeat_ = true;
  // Keep the last data item written (not its id text: formatting that on
  // every write is wasted unless the session overflows).
  bool carried_events = false;
  for (auto it = writing_.rbegin(); it != writing_.rend(); ++it) {
    if (it->frame) {
      last_written_ = std::move(*it);
      carried_events = true;
      break;
    }
  }
  writing_.clear();
  // A session whose last write held no event (hello, a heartbeat) has gone
  // quiet: it gives its queue and write buffers back, since idle sessions
  // are most of them. A busy one keeps them rather than allocate anew for
  // every write.
  if (!carried_events && queue_.empty()) {
    queue_.clear();
    std::vector<out_item>().swap(writing_);
    std::vector<boost::asio::const_buffer>().swap(buffers_);
  }
  fetch_next();
  do_write();
}

void sse_session::wait_heartbeat() {
  heartbeat_.expires_after(options_.heartbeat);
  heartbeat_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->closed_ || self->terminating_) return;
    if (!self->wrote_since_heartbeat_ && self->queue_.empty()) {
      self->enqueue_control(core::sse_event("", "heartbeat", "{\"cursor\":\"" + self->current_id() + "\"}"));
      self->do_write();
    }
    self->wrote_since_heartbeat_ = false;
    self->wait_heartbeat();
  });
}

void sse_session::wait_readable() {
  if (tls_) {
    // Through TLS (a close_notify, a key update, or the end). A read waiting
    // in OpenSSL holds no record buffer (SSL_MODE_RELEASE_BUFFERS), and
    // reading again at once takes what one record held beyond the buffer.
    tls_->stream.async_read_some(net::buffer(tls_->read_buffer),
                                 [self = shared_from_this()](const error_code& ec, std::size_t) {
                                   if (self->closed_) return;
                                   if (ec) return self->close();
                                   self->wait_readable();
                                 });
    return;
  }
  socket_.async_wait(net::socket_base::wait_read, [self = shared_from_this()](const error_code& ec) {
    if (self->closed_) return;
    if (ec) return self->close();
    // The client has nothing to say on an SSE connection: read to learn
    // whether it hung up, and drop anything else.
    char buf[512];
    error_code rec;
    auto n = self->socket_.read_some(net::buffer(buf), rec);
    if (rec == net::error::would_block || rec == net::error::try_again || (!rec && n > 0))
      return self->wait_readable();
    self->close();
  });
}

void sse_session::terminate(std::string control_frame) {
  if (terminating_ || closed_) return;
  terminating_ = true;
  unsubscribe_all();
  heartbeat_.cancel();
  if (expiry_) expiry_->cancel();
  // Frames not yet handed to the socket are dropped; the terminal frame
  // follows what is already being written.
  queue_.clear();
  queued_bytes_ = 0;
  enqueue_control(std::move(control_frame));
  deadline_ = std::make_unique<timer>(shard_.context());
  deadline_->expires_after(options_.close_deadline);
  deadline_->async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec) self->close();
  });
  do_write();
}

void sse_session::close_with_closing(const std::string& reconnect_url) {
  std::string j = "{\"reason\":\"shutdown\"";
  if (!reconnect_url.empty()) {
    j += ",\"reconnect_url\":";
    core::append_json_string(j, reconnect_url);
  }
  terminate(core::sse_event("", "closing", j + "}"));
}

void sse_session::unsubscribe_all() {
  for (std::size_t i = 0; i < subs_.size(); ++i) {
    auto& sub = subs_[i];
    if (sub.state == sub_state::live) {
      shard_.remove_live(sub.key, id_, i);
      caf::anon_send(sub.hub, actors::unsub_atom::value, actors::fanout_sink_ptr(shard_.shared_from_this()));
    }
    // A fetch still in flight is answered to the shard, which unsubscribes
    // it if it registered.
    if (sub.state != sub_state::fetching) sub.state = sub_state::ended;
  }
}

void sse_session::close() {
  if (closed_) return;
  unsubscribe_all();
  closed_ = true;
  error_code ec;
  heartbeat_.cancel();
  if (deadline_) deadline_->cancel();
  if (expiry_) expiry_->cancel();
  // Under TLS no close_notify is sent: the stream's last chunk has ended the
  // response, and waiting for the client's own close_notify would hold the
  // session's memory for a client that may never answer.
  tcp_socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  tcp_socket().close(ec);
  if (auto* m = shard_.metrics()) m->session_closed();
  shard_.remove_session(id_);  // may release the last owner: nothing after this
}

session_info sse_session::info() const {
  session_info out;
  out.shard = shard_.index();
  out.id = id_;
  out.tenant = request_.tenant;
  out.subject = request_.subject;
  out.streams = request_.streams;
  out.queue_frames = queue_.size();
  out.queue_bytes = queued_bytes_;
  out.age = std::chrono::steady_clock::now() - created_;
  error_code ec;
  auto remote = tcp_socket().remote_endpoint(ec);
  if (!ec) {
    auto host = remote.address().to_string();
    out.remote = (remote.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(remote.port());
  }
  return out;
}

}  // namespace tidings::relay
