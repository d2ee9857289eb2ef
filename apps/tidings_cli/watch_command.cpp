#include "apps/tidings_cli/watch_command.hpp"

#include <cstdio>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "apps/tidings_cli/event_line.hpp"
#include "apps/tidings_cli/reconnect_backoff.hpp"
#include "apps/tidings_cli/server_auth.hpp"
#include "client/sse_client.hpp"

namespace tidings::cli {

namespace {

// How one connection ended, and so what the loop does next.
enum class outcome {
  count_reached,  // exit 0
  ended,          // server closed, sent closing or resync: reconnect (or exit 0 with --once)
  failed,         // could not connect, or the connection broke: retry (or exit 1 with --once)
  fatal,          // the request itself is wrong (4xx, unauthorized): exit 1
};

constexpr std::chrono::milliseconds connect_timeout{10000};
// Until hello tells us the heartbeat interval, assume the documented default.
constexpr std::chrono::milliseconds default_heartbeat{20000};

struct watch_state {
  std::string resume_id;             // sent as Last-Event-ID when set
  std::optional<std::string> since;  // the user's --since, until we have an id
  std::uint64_t printed = 0;
};

std::string json_text(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string sse_target(const watch_options& opts, const watch_state& st) {
  std::string target = "/v1/sse?";
  for (std::size_t i = 0; i < opts.streams.size(); ++i) {
    if (i) target += '&';
    target += "stream=" + client::url_encode(opts.streams[i]);
  }
  if (st.resume_id.empty() && st.since) target += "&since=" + client::url_encode(*st.since);
  return target;
}

outcome on_resync(const nlohmann::json& data, watch_state& st) {
  const std::string reason = json_text(data, "reason");
  std::cerr << "tidings: resync on " << json_text(data, "stream") << ": " << reason << " (head "
            << json_text(data, "head") << ")\n";
  if (reason == "slow_consumer") {
    // Our last id and the server's "cursor" name the same point; the
    // server's covers the case where nothing reached us yet.
    if (st.resume_id.empty()) st.resume_id = json_text(data, "cursor");
    std::cerr << "tidings: resuming after " << (st.resume_id.empty() ? "now" : st.resume_id) << "\n";
  } else {
    // The old position means nothing any more (trimmed, new epoch, unknown
    // stream, or ahead of the head): continue with what happens from now on.
    st.resume_id.clear();
    st.since.reset();
    std::cerr << "tidings: continuing from now; events in between are not shown\n";
  }
  return outcome::ended;
}

outcome watch_once(const server_options& server, const watch_options& opts, watch_state& st,
                   reconnect_backoff& backoff) {
  auto headers = with_auth(server);
  if (!st.resume_id.empty()) headers.emplace_back("Last-Event-ID", st.resume_id);

  std::unique_ptr<client::sse_stream> stream;
  try {
    stream =
        std::make_unique<client::sse_stream>(server.endpoint, sse_target(opts, st), headers, connect_timeout);
  } catch (const client::transport_error& e) {
    std::cerr << "tidings: " << e.what() << "\n";
    return outcome::failed;
  }
  if (stream->status() != 200) {
    std::cerr << "tidings: " << stream->status() << ": " << error_message(stream->error_body()) << "\n";
    if (const auto hint = auth_hint(stream->status(), server)) std::cerr << "tidings: " << *hint << "\n";
    // A 4xx will not get better by asking again; a 5xx (draining) may.
    return stream->status() < 500 ? outcome::fatal : outcome::failed;
  }

  // Silence for three heartbeat intervals means the connection is dead
  // even if the socket does not know it yet.
  auto silence_limit = 3 * default_heartbeat;
  core::sse_message msg;
  for (;;) {
    switch (stream->next(msg, silence_limit)) {
      case client::sse_stream::result::timeout:
        std::cerr << "tidings: nothing from the server for "
                  << std::chrono::duration_cast<std::chrono::seconds>(silence_limit).count() << "s\n";
        return outcome::failed;
      case client::sse_stream::result::closed:
        std::cerr << "tidings: connection closed\n";
        return outcome::ended;
      case client::sse_stream::result::message:
        break;
    }

    if (msg.event.empty()) {
      if (msg.id) st.resume_id = *msg.id;
      if (const auto line = event_line(msg.data)) {
        std::fwrite(line->data(), 1, line->size(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
      } else {
        std::cerr << "tidings: skipping an event that is not a JSON object\n";
      }
      if (opts.count && ++st.printed >= *opts.count) return outcome::count_reached;
      continue;
    }

    const auto data = nlohmann::json::parse(msg.data, nullptr, false);
    const auto obj = data.is_object() ? data : nlohmann::json::object();
    if (msg.event == "hello") {
      backoff.reset();
      if (const auto hb = obj.find("heartbeat_ms"); hb != obj.end() && hb->is_number_unsigned()) {
        silence_limit = std::max(std::chrono::milliseconds(3 * hb->get<std::uint64_t>()),
                                 std::chrono::milliseconds(1000));
      }
    } else if (msg.event == "heartbeat") {
      // Under a prefix filter the heartbeat's position runs ahead of the
      // last shown event; resuming from it skips re-scanning what we passed.
      if (const auto c = json_text(obj, "cursor"); !c.empty()) st.resume_id = c;
    } else if (msg.event == "resync") {
      return on_resync(obj, st);
    } else if (msg.event == "closing") {
      std::cerr << "tidings: server closing (" << json_text(obj, "reason") << ")\n";
      return outcome::ended;
    } else if (msg.event == "unauthorized") {
      // The token expired, was revoked or lost its key mid-session.
      std::cerr << "tidings: unauthorized: " << msg.data << "\n";
      if (const auto hint = auth_hint(401, server)) std::cerr << "tidings: " << *hint << "\n";
      return outcome::fatal;
    }
  }
}

}  // namespace

int run_watch(const server_options& server, const watch_options& opts) {
  watch_state st;
  st.since = opts.since;
  reconnect_backoff backoff;
  for (;;) {
    const auto result = watch_once(server, opts, st, backoff);
    switch (result) {
      case outcome::count_reached:
        return 0;
      case outcome::fatal:
        return 1;
      case outcome::ended:
        if (opts.once) return 0;
        break;
      case outcome::failed:
        if (opts.once) return 1;
        break;
    }
    const auto delay = backoff.next();
    std::cerr << "tidings: reconnecting in " << delay.count() << "s\n";
    std::this_thread::sleep_for(delay);
  }
}

}  // namespace tidings::cli
