#pragma once

// The event log of one channel: NOTIFY payloads turned into event-log
// entries, kept in a bounded ring with their seq. Pure: no I/O.
//
// Entry shape (read as application/vnd.asyncai.events+json):
//   {"seq":N,"type":T,"path":P,"channel":C,"payload":V}
// - payload V: the NOTIFY payload parsed as JSON when it is JSON (nested at
//   most 256 levels), else the payload text as a JSON string;
// - type T: the payload's string field "type" when V is an object with a
//   non-empty one (so a trigger can send INSERT/UPDATE/DELETE or its own
//   names), else "NOTIFY";
// - path P: see postgres_config::path_field; the channel by default.
// After a reconnect: {"seq":N,"type":"GAP","path":C,"channel":C,"reason":
// "reconnected: notifications sent while disconnected are lost"}.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tidings::sources::postgres {

inline constexpr std::string_view gap_reason = "reconnected: notifications sent while disconnected are lost";

// The entry for one notification, without its seq.
nlohmann::json notify_event(std::string_view channel, std::string_view payload, std::string_view path_field);

// The entry appended after a successful re-LISTEN, without its seq.
nlohmann::json gap_event(std::string_view channel);

class event_ring {
 public:
  explicit event_ring(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Stamps the next seq (from 1) and keeps the entry, dropping the oldest
  // beyond capacity.
  void append(nlohmann::json event);

  // {"events":[...]} oldest first.
  std::string text() const;

  std::size_t size() const { return events_.size(); }
  std::uint64_t last_seq() const { return next_seq_ - 1; }

 private:
  std::size_t capacity_;
  std::uint64_t next_seq_ = 1;
  std::deque<nlohmann::json> events_;
};

}  // namespace tidings::sources::postgres
