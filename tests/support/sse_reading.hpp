#pragma once

// Reading an SSE session the way the integration tests need it: the hello,
// then data events (heartbeats skipped) until a count, a terminal control
// event, the end of the stream or a deadline. Nothing here sleeps: every wait
// is a bounded sse_stream::next().

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "core/cursor.hpp"
#include "core/sse_parser.hpp"

namespace tidings::testing {

// "/v1/sse?stream=A&stream=B[&since=...]", every value percent-encoded.
std::string sse_target(const std::vector<std::string>& selectors, const std::string& since = {});
// "/v1/sse?uri=URI": a session on a resource's source stream.
std::string uri_target(const std::string& uri);

// One unnamed SSE message, its data decoded.
struct data_event {
  std::string id;  // the SSE id field ("" when absent)
  std::string stream;
  std::string cursor;
  std::string path;
  std::string type;
  nlohmann::json data;
  nlohmann::json raw;  // the whole decoded data line(s), for fields not above
};
// Throws std::runtime_error (with the raw data) when the message is not a data event.
data_event parse_data_event(const core::sse_message& message);

// The message's data as JSON; throws with the raw data when it is not JSON.
nlohmann::json message_json(const core::sse_message& message);

// Expects 200 and a first message named `hello`; returns its data. Throws
// otherwise, so a test fails with what came instead.
nlohmann::json await_hello(client::sse_stream& session,
                           std::chrono::milliseconds timeout = std::chrono::seconds(5));

struct collected {
  enum class end { count_reached, control, closed, timeout };
  std::vector<data_event> events;
  end ended = end::timeout;
  // The named event (other than heartbeat) that stopped the collection.
  std::optional<core::sse_message> control;
};
const char* to_string(collected::end e);

// Collects data events until `count` arrived, a named event other than
// `heartbeat` arrived, the stream closed or `timeout` (total) passed.
// `Session` is client::sse_stream or raw_sse_session.
template <class Session>
collected collect_data_events(Session& session, std::size_t count, std::chrono::milliseconds timeout);

// The next message that is not a heartbeat, or nullopt on close/timeout.
template <class Session>
std::optional<core::sse_message> next_non_heartbeat(Session& session, std::chrono::milliseconds timeout);

// parse_cursor that throws, for cursors the node gave us.
core::cursor cursor_of(const std::string& text);

// Seqs of the events, in arrival order.
std::vector<std::uint64_t> seqs_of(const std::vector<data_event>& events);

// Implementation details of the templates above.
namespace detail {

inline std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
}

// Files one message into `out`; false when the collection ends with it.
bool take_message(collected& out, core::sse_message&& m);

}  // namespace detail

template <class Session>
collected collect_data_events(Session& session, std::size_t count, std::chrono::milliseconds timeout) {
  collected out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.events.size() < count) {
    auto left = detail::left_until(deadline);
    if (left.count() <= 0) {
      out.ended = collected::end::timeout;
      return out;
    }
    core::sse_message m;
    auto r = session.next(m, left);
    if (r == client::sse_stream::result::closed) {
      out.ended = collected::end::closed;
      return out;
    }
    if (r == client::sse_stream::result::timeout) {
      out.ended = collected::end::timeout;
      return out;
    }
    if (!detail::take_message(out, std::move(m))) return out;
  }
  out.ended = collected::end::count_reached;
  return out;
}

template <class Session>
std::optional<core::sse_message> next_non_heartbeat(Session& session, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = detail::left_until(deadline);
    if (left.count() <= 0) return std::nullopt;
    core::sse_message m;
    if (session.next(m, left) != client::sse_stream::result::message) return std::nullopt;
    if (m.event != "heartbeat") return m;
  }
}

// Data events until one satisfies `match` (returned); nullopt at the
// deadline, on a control event (resync, ...) or at the end of the stream.
template <class Session, class Match>
std::optional<data_event> await_event(Session& session, Match match,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = detail::left_until(deadline);
    if (left.count() <= 0) return std::nullopt;
    auto got = collect_data_events(session, 1, left);
    if (got.events.empty()) return std::nullopt;
    if (match(got.events[0])) return got.events[0];
  }
}

}  // namespace tidings::testing
