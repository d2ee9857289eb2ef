#pragma once

// Turning upstream reads into change events (ADR 0005, "Read shape"): a
// state read is diffed against the previous one, an event-log read yields
// the events after the last seq seen. Pure: no I/O, no clock.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidings::core {

inline constexpr std::string_view event_log_mime_type = "application/vnd.asyncai.events+json";

// One change as the filter sees it: `fields` is the ADR's event dict without
// `watch` and `uri` (the watch adds those): type, key, new, item, object,
// old, changed, and for event-log reads the server's own fields.
struct extracted_event {
  nlohmann::json fields = nlohmann::json::object();
  // Identity of the changed object for per-object dedupe; empty: none.
  std::string object_key;
};

// nlohmann copies, compares and dumps recursively, so values nested deeper
// than 256 levels are never copied or dumped here: see each function.
//
// A state read as a value: parsed JSON when `text` is JSON, otherwise the
// text itself as a JSON string. Text nesting deeper than 256 levels is kept
// as text, so a hostile read cannot overflow the stack later.
nlohmann::json parse_state_text(std::string_view text);

// Diff of two state reads. `before` null means no previous read: the diff is
// against an empty value of `after`'s kind (so every item is ADDED).
// A previous read that was JSON null is indistinguishable from none.
// - both arrays: items keyed by the first present of metadata.uid, uid, id,
//   metadata.name, name (a non-empty string or an integer counts), else the
//   whole item (compact JSON); items sharing a key pair up in order. ADDED and
//   MODIFIED in `after`'s order, then DELETED in `before`'s order. Fields:
//   type, key, item (the new item; the old one for DELETED), object (= item),
//   new (null for DELETED), old (MODIFIED and DELETED).
// - both objects: by top-level key, sorted; fields type, key, new, old.
// - anything else, including a change of kind (array to object, object to
//   text, ...): one CHANGED of the whole value with key "" and new and old,
//   when they differ.
// - either side nested deeper than 256 levels: one CHANGED with key "", new
//   and old null, and an `error`, when they differ.
// object_key is the item key (the watch adds its own prefix).
// A MODIFIED whose old and new are both objects carries `changed`; when
// `changed` is empty (only ignored fields differ) the event is dropped.
std::vector<extracted_event> diff_states(const nlohmann::json& before, const nlohmann::json& after);

// Sorted dotted paths (depth at most 3) where two objects differ, ignoring
// metadata.resourceVersion, metadata.generation and metadata.managedFields.
// Arrays and scalars compare whole; a path names where they differ, and a key
// on one side only is a difference. Keys containing dots make paths
// ambiguous; that is accepted. Non-object arguments give {""} when they
// differ. Never recurses deeper than 3 levels.
std::vector<std::string> changed_paths(const nlohmann::json& old_value, const nlohmann::json& new_value);

struct event_log_read {
  std::vector<extracted_event> events;  // GAP first when events were missed
  std::optional<std::uint64_t> last_seen;
};

// Events of an event-log body {"events":[{"seq":N,"type":"..",...}]} with
// seq > last_seen, in seq order. When last_seen is set and the oldest seq in
// the read is beyond last_seen + 1, a GAP event comes first with fields
// type "GAP", from (last_seen + 1), to (oldest - 1), missed (count).
// When every seq in the read is below last_seen, the log started over: a GAP
// with reset true, last_seen and newest comes first, then the read's events
// as on a first read. ERROR events pass through with their message. A MODIFIED with object and
// old gets `changed` and is dropped when it is empty. Keys: object_key is the
// object's metadata.uid, else namespace/name, else empty; `key` is
// namespace/name or name when the object has metadata.name.
// Duplicate or already-seen seqs are skipped; *out's last_seen becomes the
// largest seq in the read (unchanged without one). Without last_seen every
// event is returned. Events carry the server's fields as they are.
// Returns an error naming the offending field when the body is malformed
// (e.g. `events[2].seq is not a non-negative integer`, or an event nested
// deeper than 256 levels); *out is then untouched.
std::optional<std::string> extract_event_log(const nlohmann::json& body,
                                             std::optional<std::uint64_t> last_seen, event_log_read* out);

// The notice line for an event when the watch has no filter (ADR 0005):
// `TYPE namespace/name` (or `TYPE name`) for Kubernetes-like objects (object,
// new or item with metadata.name), `TYPE key` for state diffs, compact JSON
// of the event otherwise. MODIFIED adds up to three changes,
// `MODIFIED bid-1 (status.phase: Deciding→Published)`, strings unquoted,
// other values compact JSON, each value cut at 40 bytes; more than three
// end with `, +N more`. A MODIFIED of scalar values shows `(old→new)`.
// A key present on one side only shows as `∅`. A state CHANGED (key "") is
// just `CHANGED`. GAP: `GAP N events missed`. ERROR: `ERROR <message>`.
// The line is always one line of valid UTF-8: control characters become
// spaces, invalid bytes U+FFFD. Events nested deeper than 256 levels get a
// fixed line saying so.
std::string default_notice_line(const nlohmann::json& event);

}  // namespace tidings::core
