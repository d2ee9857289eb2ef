#pragma once

// What the store keeps for a watch: its spec (watches family), its consumer
// cursor (cursors family) and the state it diffs against (snapshots family).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cursor.hpp"

namespace tidings::persistence {

struct watch_id {
  std::string tenant;
  std::string name;
  auto operator<=>(const watch_id&) const = default;
};

struct watch_spec {
  watch_id id;
  std::string uri;
  std::optional<std::string> on_event;
  std::int64_t debounce_ms = 3000;
  std::int64_t max_wait_ms = 15000;
  std::int64_t created_ms = 0;
};

// The last read of one path of the watched stream.
struct path_state {
  std::string path;
  std::string shape;                      // "state" or "event-log"
  std::string state_json;                 // state: the read, as compact JSON
  std::optional<std::uint64_t> last_seq;  // event-log: the last seq delivered
};

// Where a watch stands: every event of `stream` up to `cursor` has its
// notices committed, and `paths` is the state as of that cursor.
// Each path's state is its own record, so a change at one path rewrites
// that path only. As read back, `paths` is every path.
struct watch_progress {
  std::string stream;
  core::cursor cursor;
  std::vector<path_state> paths;  // written: the changed paths (all of them when replace_paths)
  bool replace_paths = true;      // written: drop every stored path first
  std::string shape;              // of the newest read: "state", "event-log", "events", or "" (none yet)
};

// A source's last read (issue 4): after a restart its first read is diffed
// against this, so changes made while the node was down still come out.
// Written in the same batch as the events that read produced.
struct source_snapshot {
  std::string tenant;
  std::string key;   // the canonical source key
  path_state state;  // path: unused; shape "state" or "event-log"
};

}  // namespace tidings::persistence
