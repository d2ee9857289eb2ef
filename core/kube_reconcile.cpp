#include "core/kube_reconcile.hpp"

#include <set>
#include <utility>

namespace tidings::core {

using nlohmann::json;

namespace {

std::string metadata_string(const json& object, const char* field) {
  if (!object.is_object()) return {};
  const auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return {};
  const auto f = m->find(field);
  if (f == m->end() || !f->is_string()) return {};
  return f->get<std::string>();
}

}  // namespace

void strip_managed_fields(json& object) {
  if (!object.is_object()) return;
  const auto m = object.find("metadata");
  if (m != object.end() && m->is_object()) m->erase("managedFields");
}

std::string kube_object_key(const json& object) {
  if (auto uid = metadata_string(object, "uid"); !uid.empty()) return uid;
  auto name = metadata_string(object, "name");
  if (name.empty()) return {};
  return metadata_string(object, "namespace") + "/" + name;
}

std::map<std::string, kube_object_table::entry> kube_object_table::index(const json& items) {
  std::map<std::string, entry> out;
  if (!items.is_array()) return out;
  for (const auto& item : items) {
    auto key = kube_object_key(item);
    if (key.empty()) continue;
    json object = item;
    strip_managed_fields(object);
    auto rv = metadata_string(object, "resourceVersion");
    out[std::move(key)] = entry{std::move(rv), std::move(object)};
  }
  return out;
}

void kube_object_table::seed(const json& items) {
  objects_ = index(items);
}

std::optional<kube_event> kube_object_table::apply(json watch_event) {
  if (!watch_event.is_object()) return std::nullopt;
  const auto type_it = watch_event.find("type");
  if (type_it == watch_event.end() || !type_it->is_string()) return std::nullopt;
  const std::string type = type_it->get<std::string>();
  auto object_it = watch_event.find("object");
  if (object_it == watch_event.end()) return std::nullopt;
  json object = std::move(*object_it);

  if (type == "ERROR") {
    kube_event e;
    e.type = "ERROR";
    if (object.is_object() && object.contains("message") && object["message"].is_string())
      e.message = object["message"].get<std::string>();
    else
      e.message = object.dump();
    return e;
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") return std::nullopt;  // BOOKMARK too
  auto key = kube_object_key(object);
  if (key.empty()) return std::nullopt;
  strip_managed_fields(object);
  auto rv = metadata_string(object, "resourceVersion");

  kube_event e;
  e.type = type;
  const auto known = objects_.find(key);
  if (type == "DELETED") {
    if (known != objects_.end()) objects_.erase(known);
    e.object = std::move(object);
    return e;
  }
  if (type == "ADDED" && known != objects_.end() && known->second.resource_version == rv) return std::nullopt;
  if (type == "MODIFIED" && known != objects_.end()) e.old = std::move(known->second.object);
  e.object = object;
  objects_[std::move(key)] = entry{std::move(rv), std::move(object)};
  return e;
}

std::vector<kube_event> kube_object_table::reconcile(const json& items) {
  auto fresh = index(items);
  std::vector<kube_event> out;
  // List order for ADDED / MODIFIED, as the API server returned them.
  if (items.is_array()) {
    std::set<std::string> seen;  // a key listed twice gives one event
    for (const auto& item : items) {
      const auto key = kube_object_key(item);
      const auto now = fresh.find(key);
      if (key.empty() || now == fresh.end() || !seen.insert(key).second) continue;
      const auto before = objects_.find(key);
      if (before == objects_.end()) {
        out.push_back(kube_event{0, "ADDED", now->second.object, nullptr, {}});
      } else if (before->second.resource_version != now->second.resource_version) {
        out.push_back(kube_event{0, "MODIFIED", now->second.object, std::move(before->second.object), {}});
      }
    }
  }
  for (auto& [key, before] : objects_)
    if (!fresh.count(key)) out.push_back(kube_event{0, "DELETED", std::move(before.object), nullptr, {}});
  objects_ = std::move(fresh);
  return out;
}

std::uint64_t kube_event_log::append(kube_event e) {
  e.seq = next_seq_++;
  events_.push_back(std::move(e));
  while (events_.size() > capacity_) events_.pop_front();
  return events_.back().seq;
}

std::string kube_event_log::render() const {
  json events = json::array();
  for (const auto& e : events_) {
    json j = {{"seq", e.seq}, {"type", e.type}};
    if (e.type == "ERROR") {
      j["message"] = e.message;
    } else {
      j["object"] = e.object;
      if (e.type == "MODIFIED" && !e.old.is_null()) j["old"] = e.old;
    }
    events.push_back(std::move(j));
  }
  // Strings came from parsed JSON, but never let a bad byte throw here.
  return json{{"events", std::move(events)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tidings::core
