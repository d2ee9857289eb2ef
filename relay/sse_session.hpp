#pragma once

// One SSE connection, living on one io_shard's thread.
//
//   probing ──all heads known──> hello written ──> fetching ⇄ waiting_room
//                                                     │ caught up
//                                                     v
//                                                    live
//   any state ──resync / closing / overflow──> terminal frame ──> closed
//
// Frames from all of the connection's streams go into one bounded queue.
// Whatever is queued when the socket is ready goes out in one write (up to
// write_bytes), so a session that is behind catches up with few syscalls.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/hub_actor.hpp"
#include "core/fifo.hpp"
#include "relay/session_guard.hpp"
#include "relay/session_info.hpp"
#include "relay/sse_options.hpp"

namespace tidings::relay {

class io_shard;
struct tls_connection;

class sse_session : public std::enable_shared_from_this<sse_session> {
 public:
  sse_session(io_shard& shard, boost::asio::ip::tcp::socket socket, sse_request request,
              const sse_options& options);
  // An HTTPS connection: the session writes and reads through its TLS stream.
  sse_session(io_shard& shard, std::unique_ptr<tls_connection> tls, sse_request request,
              const sse_options& options);
  ~sse_session();
  sse_session(const sse_session&) = delete;
  sse_session& operator=(const sse_session&) = delete;

  // Registers with the shard, writes the response header and asks every
  // stream's hub for its head.
  void start();

  // From the shard, on this thread.
  void on_fetched(std::size_t index, const actors::fetch_reply& reply);
  void on_frames(std::size_t index, const actors::frame_batch& batch);
  // The hub or relay `from` no longer serves this stream: fetch again.
  void on_moved(std::size_t index, const caf::actor_addr& from);
  void close_with_closing(const std::string& reconnect_url = {});
  // Ends the session with `unauthorized` if its credential no longer holds.
  void recheck_auth();
  // The shard's coalescing timer fired: write what is queued.
  void flush_deferred();
  // What the admin API shows of this session (on this thread).
  session_info info() const;

 private:
  enum class sub_state { probing, fetching, waiting_room, live, ended };
  struct subscription {
    actors::stream_key key;
    std::string prefix;
    bool check_each = false;  // the guard is asked about every event
    actors::stream_actor hub;
    core::cursor position;  // last event scanned (delivered or filtered out)
    sub_state state = sub_state::probing;
    // Its owner changed since the last page: a resync now is `owner_changed`.
    bool moved = false;
  };
  struct out_item {
    actors::frame_ptr frame;  // null: `text` is a whole control frame
    std::string text;         // per-session id line (multi-stream), or the control frame
    std::size_t index = 0;    // which subscription
    std::size_t bytes = 0;
    // Set for live events only: when their hub learned they were durable.
    std::chrono::steady_clock::time_point durable_at{};
  };

  void fetch(std::size_t index);
  void fetch_next();
  void write_hello();
  void accept_frame(std::size_t index, std::uint64_t epoch, const actors::frame_ptr& f,
                    std::chrono::steady_clock::time_point durable_at = {});
  void enqueue(out_item item, std::size_t bytes);
  void enqueue_control(std::string frame);
  std::string id_of(const out_item& item) const;
  std::string last_delivered_id() const;
  void unsubscribe_all();
  bool has_room() const;
  void flush_soon();
  void do_write();
  void on_write(const boost::system::error_code& ec);
  void wait_heartbeat();
  void wait_readable();
  void wait_expiry();
  void end_unauthorized(const auth_lapse& lapse);
  void end_resync(const std::string& stream, std::string_view reason, core::cursor head,
                  const std::string& resume_id);
  void terminate(std::string control_frame);
  void close();
  std::string current_id() const;
  boost::asio::ip::tcp::socket& tcp_socket();
  const boost::asio::ip::tcp::socket& tcp_socket() const;

  // Timers bound to the shard's io_context itself: a type-erased executor
  // would add tens of bytes to each of them in every idle session.
  using timer = boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                                  boost::asio::wait_traits<std::chrono::steady_clock>,
                                                  boost::asio::io_context::executor_type>;

  io_shard& shard_;
  boost::asio::ip::tcp::socket socket_;  // plain HTTP; unused (never opened) under TLS
  std::unique_ptr<tls_connection> tls_;  // HTTPS: null for plain HTTP
  timer heartbeat_;
  // Made when first needed: most sessions never end by deadline, and a
  // credential without exp has none.
  std::unique_ptr<timer> deadline_;
  std::unique_ptr<timer> expiry_;  // the credential's exp
  sse_request request_;
  const sse_options& options_;
  std::uint64_t id_ = 0;
  std::vector<subscription> subs_;
  std::size_t probes_left_ = 0;
  bool fetch_in_flight_ = false;
  std::size_t next_fetch_ = 0;
  std::string start_id_;  // positions when hello was written
  std::vector<core::cursor> heads_;
  std::string preamble_;  // the HTTP response header, written before the first chunk
  std::vector<boost::asio::const_buffer> buffers_;

  core::fifo<out_item> queue_;  // holds nothing while the session is idle
  std::size_t queued_bytes_ = 0;
  std::vector<out_item> writing_;  // kept alive while the write is in flight
  std::string chunk_head_;
  bool write_in_flight_ = false;
  bool flush_deferred_ = false;
  std::chrono::steady_clock::time_point last_write_{};
  bool wrote_since_heartbeat_ = false;
  bool terminating_ = false;
  bool closed_ = false;
  out_item last_written_;  // the last data event written, for slow_consumer's resume hint
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
};

}  // namespace tidings::relay
