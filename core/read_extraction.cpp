#include "core/read_extraction.hpp"

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <utility>

#include "core/event_body.hpp"
#include "core/utf8.hpp"

namespace tidings::core {

namespace {

using json = nlohmann::json;

// nlohmann copies, compares and dumps recursively, so a value nested deeper
// than this could overflow the stack. Text that deep is kept as text, and
// values that deep are never copied or dumped.
constexpr std::size_t max_depth = 256;
constexpr std::size_t max_change_depth = 3;
constexpr std::size_t max_shown_changes = 3;
constexpr std::size_t max_value_bytes = 40;

constexpr std::string_view arrow = "\xe2\x86\x92";   // →
constexpr std::string_view absent = "\xe2\x88\x85";  // ∅, a key on one side only
constexpr std::string_view replacement = "\xef\xbf\xbd";

// Never throws: invalid UTF-8 in strings is replaced instead of raising 316.
std::string compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

const json* member(const json& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  auto it = value.find(key);
  return it == value.end() ? nullptr : &*it;
}

const std::string* string_member(const json& value, std::string_view key) {
  const json* m = member(value, key);
  return m == nullptr ? nullptr : m->get_ptr<const std::string*>();
}

std::optional<std::uint64_t> unsigned_value(const json* value) {
  if (value == nullptr) return std::nullopt;
  if (const auto* u = value->get_ptr<const json::number_unsigned_t*>()) return *u;
  if (const auto* i = value->get_ptr<const json::number_integer_t*>(); i != nullptr && *i >= 0) {
    return static_cast<std::uint64_t>(*i);
  }
  return std::nullopt;
}

// An identity field: a non-empty string, or an integer (ids are often numbers).
std::optional<std::string> identity(const json* value) {
  if (value == nullptr) return std::nullopt;
  if (const auto* s = value->get_ptr<const std::string*>()) {
    if (s->empty()) return std::nullopt;
    return *s;
  }
  if (value->is_number_integer()) return compact(*value);
  return std::nullopt;
}

bool nests_deeper_than(const json& value, std::size_t limit) {
  std::vector<std::pair<const json*, std::size_t>> stack{{&value, 1}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth > limit) return true;
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

// Iterative, unlike json::operator==, so deep values cannot overflow the stack.
bool same_json(const json& a, const json& b) {
  std::vector<std::pair<const json*, const json*>> stack{{&a, &b}};
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    if (x->is_object() && y->is_object()) {
      if (x->size() != y->size()) return false;
      // Objects are sorted maps, so equal objects walk in step.
      for (auto xi = x->begin(), yi = y->begin(); xi != x->end(); ++xi, ++yi) {
        if (xi.key() != yi.key()) return false;
        stack.emplace_back(&*xi, &*yi);
      }
    } else if (x->is_array() && y->is_array()) {
      if (x->size() != y->size()) return false;
      for (auto xi = x->begin(), yi = y->begin(); xi != x->end(); ++xi, ++yi) stack.emplace_back(&*xi, &*yi);
    } else if (x->is_structured() || y->is_structured() || *x != *y) {
      return false;
    }
  }
  return true;
}

struct change {
  std::string path;
  const json* old_value;  // nullptr: the key is absent on that side
  const json* new_value;
};

bool ignored(bool under_metadata, const std::string& key) {
  return under_metadata && (key == "resourceVersion" || key == "generation" || key == "managedFields");
}

// Both arguments are objects. The ignore list is matched structurally, so a
// top-level key that itself contains a dot is never mistaken for it.
void collect_changes(const json& old_obj, const json& new_obj, const std::string& prefix, std::size_t depth,
                     bool under_metadata, std::vector<change>* out) {
  auto oi = old_obj.begin();
  auto ni = new_obj.begin();
  while (oi != old_obj.end() || ni != new_obj.end()) {
    int order = oi == old_obj.end() ? 1 : ni == new_obj.end() ? -1 : oi.key().compare(ni.key());
    const std::string& key = order <= 0 ? oi.key() : ni.key();
    const json* o = order <= 0 ? &*oi : nullptr;
    const json* n = order >= 0 ? &*ni : nullptr;
    if (order <= 0) ++oi;
    if (order >= 0) ++ni;
    if (ignored(under_metadata, key)) continue;
    std::string path = prefix;
    if (!path.empty()) path += '.';
    path += key;
    if (o != nullptr && n != nullptr && o->is_object() && n->is_object() && depth < max_change_depth) {
      collect_changes(*o, *n, path, depth + 1, depth == 1 && key == "metadata", out);
    } else if (o == nullptr || n == nullptr || !same_json(*o, *n)) {
      out->push_back({std::move(path), o, n});
    }
  }
}

std::vector<change> sorted_changes(const json& old_obj, const json& new_obj) {
  std::vector<change> out;
  collect_changes(old_obj, new_obj, "", 1, false, &out);
  std::sort(out.begin(), out.end(), [](const change& a, const change& b) { return a.path < b.path; });
  return out;
}

std::string item_key(const json& item) {
  const json* meta = member(item, "metadata");
  const json* candidates[] = {meta == nullptr ? nullptr : member(*meta, "uid"), member(item, "uid"),
                              member(item, "id"), meta == nullptr ? nullptr : member(*meta, "name"),
                              member(item, "name")};
  for (const json* candidate : candidates) {
    if (auto key = identity(candidate)) return *std::move(key);
  }
  return compact(item);
}

// `namespace/name`, or `name` without a namespace; nullopt unless the value
// looks like a Kubernetes object.
std::optional<std::string> kube_name(const json* value) {
  if (value == nullptr) return std::nullopt;
  const json* meta = member(*value, "metadata");
  if (meta == nullptr) return std::nullopt;
  const std::string* name = string_member(*meta, "name");
  if (name == nullptr || name->empty()) return std::nullopt;
  const std::string* ns = string_member(*meta, "namespace");
  if (ns == nullptr || ns->empty()) return *name;
  return *ns + "/" + *name;
}

extracted_event make_event(std::string_view type, const std::string& key) {
  extracted_event e;
  e.fields["type"] = type;
  e.fields["key"] = key;
  e.object_key = key;
  return e;
}

// Adds `changed` to a MODIFIED of two objects; false when only ignored
// fields differ and the event should be dropped.
bool add_changed(const json& old_value, const json& new_value, json* fields) {
  if (!old_value.is_object() || !new_value.is_object()) return true;
  std::vector<std::string> paths = changed_paths(old_value, new_value);
  if (paths.empty()) return false;
  (*fields)["changed"] = std::move(paths);
  return true;
}

void diff_arrays(const json& before, const json& after, std::vector<extracted_event>* out) {
  // Items sharing a key pair up in order, so duplicate keys (including
  // identical key-less items) behave like a multiset.
  struct occurrences {
    std::vector<std::size_t> indexes;
    std::size_t next = 0;
  };
  std::vector<std::string> before_keys;
  before_keys.reserve(before.size());
  std::unordered_map<std::string, occurrences> by_key;
  for (const auto& item : before) {
    before_keys.push_back(item_key(item));
    by_key[before_keys.back()].indexes.push_back(before_keys.size() - 1);
  }
  std::vector<bool> matched(before.size(), false);
  for (const auto& item : after) {
    std::string key = item_key(item);
    auto it = by_key.find(key);
    if (it == by_key.end() || it->second.next == it->second.indexes.size()) {
      extracted_event e = make_event("ADDED", key);
      e.fields["item"] = item;
      e.fields["object"] = item;
      e.fields["new"] = item;
      out->push_back(std::move(e));
      continue;
    }
    std::size_t index = it->second.indexes[it->second.next++];
    matched[index] = true;
    const json& old_item = before[index];
    if (same_json(old_item, item)) continue;
    extracted_event e = make_event("MODIFIED", key);
    if (!add_changed(old_item, item, &e.fields)) continue;
    e.fields["item"] = item;
    e.fields["object"] = item;
    e.fields["new"] = item;
    e.fields["old"] = old_item;
    out->push_back(std::move(e));
  }
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (matched[i]) continue;
    extracted_event e = make_event("DELETED", before_keys[i]);
    e.fields["item"] = before[i];
    e.fields["object"] = before[i];
    e.fields["new"] = nullptr;
    e.fields["old"] = before[i];
    out->push_back(std::move(e));
  }
}

void diff_objects(const json& before, const json& after, std::vector<extracted_event>* out) {
  auto bi = before.begin();
  auto ai = after.begin();
  while (bi != before.end() || ai != after.end()) {
    int order = bi == before.end() ? 1 : ai == after.end() ? -1 : bi.key().compare(ai.key());
    if (order > 0) {
      extracted_event e = make_event("ADDED", ai.key());
      e.fields["new"] = *ai;
      out->push_back(std::move(e));
      ++ai;
    } else if (order < 0) {
      extracted_event e = make_event("DELETED", bi.key());
      e.fields["new"] = nullptr;
      e.fields["old"] = *bi;
      out->push_back(std::move(e));
      ++bi;
    } else {
      if (!same_json(*bi, *ai)) {
        extracted_event e = make_event("MODIFIED", ai.key());
        if (add_changed(*bi, *ai, &e.fields)) {
          e.fields["new"] = *ai;
          e.fields["old"] = *bi;
          out->push_back(std::move(e));
        }
      }
      ++bi;
      ++ai;
    }
  }
}

std::string cut(std::string value) {
  return cut_utf8(std::move(value), max_value_bytes);
}

std::string shown(const json* value) {
  if (value == nullptr) return std::string(absent);
  if (const auto* s = value->get_ptr<const std::string*>()) return cut(*s);
  return cut(compact(*value));
}

std::string transition(const json* old_value, const json* new_value) {
  return shown(old_value) + std::string(arrow) + shown(new_value);
}

std::string modified_suffix(const json& event) {
  const json* old_value = member(event, "old");
  const json* new_value = member(event, "object");
  if (new_value == nullptr) new_value = member(event, "new");
  if (new_value == nullptr) new_value = member(event, "item");
  if (old_value == nullptr || new_value == nullptr) return "";
  if (!old_value->is_object() || !new_value->is_object())
    return " (" + transition(old_value, new_value) + ")";
  std::vector<change> changes = sorted_changes(*old_value, *new_value);
  if (changes.empty()) return "";
  std::string out = " (";
  for (std::size_t i = 0; i < changes.size() && i < max_shown_changes; ++i) {
    if (i > 0) out += ", ";
    out += changes[i].path + ": " + transition(changes[i].old_value, changes[i].new_value);
  }
  if (changes.size() > max_shown_changes)
    out += ", +" + std::to_string(changes.size() - max_shown_changes) + " more";
  return out + ")";
}

// A notice line stays one line of valid UTF-8 whatever the server sent:
// controls become spaces, invalid bytes U+FFFD.
std::string sanitized(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t pos = 0; pos < line.size();) {
    std::uint32_t cp = 0;
    std::size_t len = utf8_sequence(line, pos, &cp);
    if (len == 0) {
      out += replacement;
      ++pos;
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      out += ' ';
      pos += len;
    } else {
      out.append(line.substr(pos, len));
      pos += len;
    }
  }
  return out;
}

std::string subject_line(const json& event, const std::string& type) {
  std::optional<std::string> subject;
  for (std::string_view field : {"object", "new", "item"}) {
    subject = kube_name(member(event, field));
    if (subject) break;
  }
  if (!subject) {
    const std::string* key = string_member(event, "key");
    if (key == nullptr) return compact(event);
    subject = *key;
  }
  std::string line = subject->empty() ? type : type + " " + *subject;
  if (type == "MODIFIED") line += modified_suffix(event);
  return line;
}

}  // namespace

nlohmann::json parse_state_text(std::string_view text) {
  if (!json_nesting_within(text, max_depth)) return json(std::string(text));
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return json(std::string(text));
  return parsed;
}

std::vector<extracted_event> diff_states(const nlohmann::json& before, const nlohmann::json& after) {
  std::vector<extracted_event> out;
  if (nests_deeper_than(before, max_depth) || nests_deeper_than(after, max_depth)) {
    // Too deep to copy safely; parse_state_text never produces such values.
    if (!same_json(before, after)) {
      extracted_event e = make_event("CHANGED", "");
      e.fields["new"] = nullptr;
      e.fields["old"] = nullptr;
      e.fields["error"] = "state nests deeper than " + std::to_string(max_depth) + " levels";
      out.push_back(std::move(e));
    }
    return out;
  }
  // Both branches of each ?: are lvalues, so `before` is not copied.
  const json empty_array = json::array();
  const json empty_object = json::object();
  bool first_read = before.is_null();
  if (after.is_array() && (first_read || before.is_array())) {
    diff_arrays(first_read ? empty_array : before, after, &out);
  } else if (after.is_object() && (first_read || before.is_object())) {
    diff_objects(first_read ? empty_object : before, after, &out);
  } else if (!same_json(before, after)) {
    // Scalars, text, or a change of kind (array to object, ...): one
    // CHANGED of the whole value under the empty key.
    extracted_event e = make_event("CHANGED", "");
    e.fields["new"] = after;
    e.fields["old"] = before;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> changed_paths(const nlohmann::json& old_value, const nlohmann::json& new_value) {
  std::vector<std::string> paths;
  if (!old_value.is_object() || !new_value.is_object()) {
    if (!same_json(old_value, new_value)) paths.emplace_back();
    return paths;
  }
  for (change& c : sorted_changes(old_value, new_value)) paths.push_back(std::move(c.path));
  return paths;
}

std::optional<std::string> extract_event_log(const nlohmann::json& body,
                                             std::optional<std::uint64_t> last_seen, event_log_read* out) {
  if (out == nullptr) return "no output given";
  if (!body.is_object()) return "body is not an object";
  const json* events = member(body, "events");
  if (events == nullptr || !events->is_array()) return "events is not an array";

  struct entry {
    std::uint64_t seq;
    const json* event;
    const std::string* type;
  };
  std::vector<entry> entries;
  entries.reserve(events->size());
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& event = (*events)[i];
    std::string where = "events[" + std::to_string(i) + "]";
    if (!event.is_object()) return where + " is not an object";
    std::optional<std::uint64_t> seq = unsigned_value(member(event, "seq"));
    if (!seq) return where + ".seq is not a non-negative integer";
    const std::string* type = string_member(event, "type");
    if (type == nullptr) return where + ".type is not a string";
    if (nests_deeper_than(event, max_depth))
      return where + " nests deeper than " + std::to_string(max_depth) + " levels";
    entries.push_back({*seq, &event, type});
  }

  event_log_read result;
  result.last_seen = last_seen;
  if (entries.empty()) {
    *out = std::move(result);
    return std::nullopt;
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const entry& a, const entry& b) { return a.seq < b.seq; });
  std::uint64_t oldest = entries.front().seq;
  std::uint64_t newest = entries.back().seq;
  if (last_seen && newest < *last_seen) {
    // Every seq is below one already seen: the server's log started over
    // (a restart, a new ring). Say so, then read it as a first read.
    extracted_event reset;
    reset.fields = {{"type", "GAP"}, {"reset", true}, {"last_seen", *last_seen}, {"newest", newest}};
    result.events.push_back(std::move(reset));
    last_seen.reset();
  }
  result.last_seen = last_seen ? std::max(*last_seen, newest) : newest;

  // Written so that last_seen + 1 cannot overflow.
  if (last_seen && oldest > *last_seen && oldest - *last_seen > 1) {
    extracted_event gap;
    gap.fields["type"] = "GAP";
    gap.fields["from"] = *last_seen + 1;
    gap.fields["to"] = oldest - 1;
    gap.fields["missed"] = oldest - *last_seen - 1;
    result.events.push_back(std::move(gap));
  }
  std::optional<std::uint64_t> delivered = last_seen;
  for (const entry& e : entries) {
    if (delivered && e.seq <= *delivered) continue;  // already seen, or a duplicate seq
    delivered = e.seq;
    extracted_event ev;
    ev.fields = *e.event;
    const json* object = member(*e.event, "object");
    const json* old_value = member(*e.event, "old");
    if (*e.type == "MODIFIED" && object != nullptr && old_value != nullptr &&
        !add_changed(*old_value, *object, &ev.fields)) {
      continue;
    }
    std::optional<std::string> name = kube_name(object);
    if (name) ev.fields["key"] = *name;
    const json* meta = object == nullptr ? nullptr : member(*object, "metadata");
    std::optional<std::string> uid = meta == nullptr ? std::nullopt : identity(member(*meta, "uid"));
    ev.object_key = uid ? *uid : name.value_or("");
    result.events.push_back(std::move(ev));
  }
  *out = std::move(result);
  return std::nullopt;
}

std::string default_notice_line(const nlohmann::json& event) {
  if (nests_deeper_than(event, max_depth))
    return "event nests deeper than " + std::to_string(max_depth) + " levels";
  const std::string* type = string_member(event, "type");
  if (type == nullptr) return sanitized(compact(event));
  if (*type == "GAP") {
    if (const json* reset = member(event, "reset"); reset != nullptr && *reset == true) {
      auto newest = unsigned_value(member(event, "newest"));
      return "GAP the event log started over" +
             (newest ? " (now at seq " + std::to_string(*newest) + ")" : "") +
             "; events may have been missed";
    }
    if (auto missed = unsigned_value(member(event, "missed"))) {
      return "GAP " + std::to_string(*missed) + " events missed";
    }
    // A source's own (a reconnect, an outage it healed from).
    if (const json* reason = member(event, "reason"); reason != nullptr && reason->is_string())
      return sanitized("GAP " + reason->get<std::string>());
  } else if (*type == "ERROR") {
    const json* message = member(event, "message");
    if (message == nullptr || message->is_null()) return "ERROR";
    const auto* text = message->get_ptr<const std::string*>();
    return sanitized("ERROR " + (text != nullptr ? *text : compact(*message)));
  }
  return sanitized(subject_line(event, *type));
}

}  // namespace tidings::core
