#pragma once

// The pure half of the Kubernetes watch source (issue 4, ADR 000 "kcp:
// event-log resources"): the table of known objects, watch events applied
// to it, the re-list after a broken watch, and the bounded event log that
// reads render.
//
//   list ──seed──▶ table ◀──apply── watch events ──▶ log (seq, 256)
//                    ▲                                  ▲
//   re-list ─reconcile (synthetic ADDED/MODIFIED/DELETED)┘
//
// Objects are keyed by metadata.uid (namespace/name when a fake or odd
// server gives none) and compared by metadata.resourceVersion.
// metadata.managedFields is stripped everywhere: it is large and noise.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidings::core {

struct kube_event {
  std::uint64_t seq = 0;  // set by kube_event_log::append
  std::string type;       // ADDED, MODIFIED, DELETED or ERROR
  nlohmann::json object;  // null for ERROR
  nlohmann::json old;     // the previous object for MODIFIED, else null
  std::string message;    // ERROR only
};

void strip_managed_fields(nlohmann::json& object);

// The table key of an object, "" when it has neither uid nor name.
std::string kube_object_key(const nlohmann::json& object);

class kube_object_table {
 public:
  // Replaces the table with a list's items (without events).
  void seed(const nlohmann::json& items);

  // Applies one watch event ({"type":..., "object":...}). Returns the event
  // to log, or nothing for a suppressed one: an ADDED whose uid and
  // resourceVersion are already known (the watch replays what the list
  // gave), a BOOKMARK, or a malformed event. An ERROR event passes with the
  // Status object's message.
  std::optional<kube_event> apply(nlohmann::json watch_event);

  // Replaces the table with a re-list's items and returns what changed in
  // between as synthetic events: ADDED and MODIFIED (with old) in list
  // order, then DELETED in key order.
  std::vector<kube_event> reconcile(const nlohmann::json& items);

  std::size_t size() const { return objects_.size(); }
  bool contains(const std::string& key) const { return objects_.count(key) > 0; }

 private:
  struct entry {
    std::string resource_version;
    nlohmann::json object;
  };
  static std::map<std::string, entry> index(const nlohmann::json& items);

  std::map<std::string, entry> objects_;
};

// A bounded ring of events with a monotonically increasing seq. Reads are
// stateless: a reader sees the newest `capacity` events and detects a gap
// by the first seq.
class kube_event_log {
 public:
  explicit kube_event_log(std::size_t capacity = 256) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Assigns the next seq and returns it; drops the oldest event when full.
  std::uint64_t append(kube_event e);

  // {"events":[{"seq":N,"type":"ADDED","object":{...}}, ...]}, "old" only
  // for MODIFIED, "message" (and no object) for ERROR.
  std::string render() const;

  std::uint64_t last_seq() const { return next_seq_ - 1; }
  std::size_t size() const { return events_.size(); }
  const std::deque<kube_event>& events() const { return events_; }

 private:
  std::size_t capacity_;
  std::uint64_t next_seq_ = 1;
  std::deque<kube_event> events_;
};

}  // namespace tidings::core
