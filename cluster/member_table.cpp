#include "cluster/member_table.hpp"

#include <algorithm>
#include <set>

namespace tidings::cluster {

member_table::member_table(member self) : self_(std::move(self)) {}

void member_table::set_self(member self) {
  self_ = std::move(self);
}

bool member_table::set_agreed(const std::vector<member>& members) {
  bool changed = false;
  bool listed_self = false;
  std::set<std::string> listed;
  for (const auto& m : members) {
    if (m.id.empty()) continue;
    if (m.id == self_.id) {
      // Our own record as etcd holds it may lag our draining flag: we know best.
      listed_self = true;
      continue;
    }
    listed.insert(m.id);
    auto [it, added] = others_.try_emplace(m.id, entry{m, member_state::up});
    if (added) {
      changed = true;
      continue;
    }
    auto record = m;
    if (it->second.m.incarnation == m.incarnation && it->second.m.draining) record.draining = true;
    if (it->second.m != record || it->second.state != member_state::up) changed = true;
    it->second = entry{record, member_state::up};
  }
  for (auto& [id, e] : others_)
    if (!listed.contains(id) && e.state == member_state::up) {
      e.state = member_state::down;
      changed = true;
    }
  if (listed_self != is_member_) changed = true;
  is_member_ = listed_self;
  return changed;
}

bool member_table::mark_draining(const std::string& id, std::int64_t incarnation) {
  auto it = others_.find(id);
  if (it == others_.end() || it->second.m.incarnation != incarnation || it->second.m.draining) return false;
  it->second.m.draining = true;
  return true;
}

bool member_table::lapse() {
  bool was = is_member_;
  is_member_ = false;
  return was;
}

std::optional<member> member_table::find(const std::string& id) const {
  if (id == self_.id) return self_;
  auto it = others_.find(id);
  if (it == others_.end()) return std::nullopt;
  return it->second.m;
}

std::optional<member_state> member_table::state(const std::string& id) const {
  if (id == self_.id) return is_member_ ? member_state::up : member_state::down;
  auto it = others_.find(id);
  if (it == others_.end()) return std::nullopt;
  return it->second.state;
}

std::vector<std::string> member_table::live_ids() const {
  std::vector<std::string> out;
  if (is_member_) out.push_back(self_.id);
  for (const auto& [id, e] : others_)
    if (e.state == member_state::up) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> member_table::placement_ids() const {
  std::vector<std::string> out;
  if (is_member_ && !self_.draining) out.push_back(self_.id);
  for (const auto& [id, e] : others_)
    if (e.state == member_state::up && !e.m.draining) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> member_table::lost_ids() const {
  std::vector<std::string> out;
  for (const auto& [id, e] : others_)
    if (e.state == member_state::down && !e.m.draining) out.push_back(id);  // drained: left, not lost
  return out;
}

std::vector<member> member_table::all() const {
  std::vector<member> out{self_};
  for (const auto& [id, e] : others_) out.push_back(e.m);
  return out;
}

std::vector<member> member_table::others_up() const {
  std::vector<member> out;
  for (const auto& [id, e] : others_)
    if (e.state == member_state::up) out.push_back(e.m);
  return out;
}

}  // namespace tidings::cluster
