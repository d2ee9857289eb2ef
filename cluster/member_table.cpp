#include "cluster/member_table.hpp"

#include <algorithm>

namespace tidings::cluster {

member_table::member_table(member self) : self_(std::move(self)) {}

void member_table::set_self(member self) {
  self_ = std::move(self);
}

bool member_table::learn(const member& m) {
  if (m.id.empty() || m.id == self_.id) return false;
  auto it = others_.find(m.id);
  if (it == others_.end()) {
    others_.emplace(m.id, entry{m, member_state::down, false});
    return true;
  }
  auto& e = it->second;
  if (m.incarnation < e.m.incarnation) return false;
  if (m.incarnation > e.m.incarnation) {
    // A newer life: what we knew of the old one (its connection) is stale.
    e.m = m;
    e.state = member_state::down;
    return true;
  }
  // One life of a node keeps its addresses; only draining can change, and
  // only one way. (Accepting any differing record let two gossipers with
  // different copies flip each other forever.)
  if (m.draining && !e.m.draining) {
    e.m.draining = true;
    return true;
  }
  return false;
}

bool member_table::mark_up(const std::string& id, std::int64_t incarnation) {
  auto it = others_.find(id);
  if (it == others_.end() || it->second.m.incarnation != incarnation) return false;
  auto& e = it->second;
  if (e.state == member_state::up) return false;
  e.state = member_state::up;
  e.ever_up = true;
  return true;
}

bool member_table::mark_down(const std::string& id) {
  auto it = others_.find(id);
  if (it == others_.end() || it->second.state == member_state::down) return false;
  it->second.state = member_state::down;
  return true;
}

std::optional<member> member_table::find(const std::string& id) const {
  if (id == self_.id) return self_;
  auto it = others_.find(id);
  if (it == others_.end()) return std::nullopt;
  return it->second.m;
}

std::optional<member_state> member_table::state(const std::string& id) const {
  if (id == self_.id) return member_state::up;
  auto it = others_.find(id);
  if (it == others_.end()) return std::nullopt;
  return it->second.state;
}

std::vector<std::string> member_table::live_ids() const {
  std::vector<std::string> out{self_.id};
  for (auto& [id, e] : others_)
    if (e.state == member_state::up) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> member_table::placement_ids() const {
  std::vector<std::string> out;
  if (!self_.draining) out.push_back(self_.id);
  for (auto& [id, e] : others_)
    if (e.state == member_state::up && !e.m.draining) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> member_table::lost_ids() const {
  std::vector<std::string> out;
  for (auto& [id, e] : others_)
    if (e.state == member_state::down && e.ever_up && !e.m.draining)
      out.push_back(id);  // drained: left, not lost
  return out;
}

std::vector<member> member_table::all() const {
  std::vector<member> out{self_};
  for (auto& [id, e] : others_) out.push_back(e.m);
  return out;
}

std::vector<member> member_table::unconnected() const {
  std::vector<member> out;
  for (auto& [id, e] : others_)
    if (e.state == member_state::down) out.push_back(e.m);
  return out;
}

}  // namespace tidings::cluster
