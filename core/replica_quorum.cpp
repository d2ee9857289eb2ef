#include "core/replica_quorum.hpp"

#include <algorithm>

namespace tidings::core {

replica_quorum::replica_quorum(std::uint64_t acknowledged, std::optional<std::size_t> required)
    : acknowledged_(acknowledged), required_(required) {}

void replica_quorum::add(const std::string& follower) {
  followers_.try_emplace(follower);
}

void replica_quorum::remove(const std::string& follower) {
  if (followers_.erase(follower) > 0) advance();
}

void replica_quorum::set_in_sync(const std::string& follower, bool in_sync) {
  auto it = followers_.find(follower);
  if (it == followers_.end()) return;
  it->second.in_sync = in_sync;
  if (!in_sync) advance();
}

void replica_quorum::confirm(const std::string& follower, std::uint64_t head) {
  auto it = followers_.find(follower);
  if (it == followers_.end() || head <= it->second.confirmed) return;
  it->second.confirmed = head;
  advance();
}

void replica_quorum::shipped(std::uint64_t last_seq) {
  batch b;
  b.last_seq = last_seq;
  if (!required_)
    for (const auto& [id, f] : followers_)
      if (f.in_sync) b.required.push_back(id);
  batches_.push_back(std::move(b));
  advance();
}

bool replica_quorum::satisfied(const batch& b) const {
  if (required_) {
    std::size_t holding = 0;
    for (const auto& [id, f] : followers_) holding += f.confirmed >= b.last_seq;
    return holding >= *required_;
  }
  for (const auto& id : b.required) {
    auto it = followers_.find(id);
    if (it != followers_.end() && it->second.in_sync && it->second.confirmed < b.last_seq) return false;
  }
  return true;
}

void replica_quorum::advance() {
  while (!batches_.empty() && satisfied(batches_.front())) {
    acknowledged_ = std::max(acknowledged_, batches_.front().last_seq);
    batches_.pop_front();
  }
}

bool replica_quorum::can_acknowledge() const {
  return !required_ || in_sync_count() >= *required_;
}

bool replica_quorum::in_sync(const std::string& follower) const {
  auto it = followers_.find(follower);
  return it != followers_.end() && it->second.in_sync;
}

std::uint64_t replica_quorum::confirmed(const std::string& follower) const {
  auto it = followers_.find(follower);
  return it == followers_.end() ? 0 : it->second.confirmed;
}

std::size_t replica_quorum::in_sync_count() const {
  std::size_t n = 0;
  for (const auto& [id, f] : followers_) n += f.in_sync;
  return n;
}

std::vector<std::string> replica_quorum::followers() const {
  std::vector<std::string> out;
  for (const auto& [id, f] : followers_) out.push_back(id);
  return out;
}

}  // namespace tidings::core
