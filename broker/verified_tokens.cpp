#include "broker/verified_tokens.hpp"

#include <openssl/sha.h>

#include <algorithm>

namespace tidings::broker {
namespace {

std::string digest(std::string_view token) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(),
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

}  // namespace

verified_tokens::verified_tokens(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

session_auth_ptr verified_tokens::find(std::string_view token) const {
  auto key = digest(token);
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

void verified_tokens::remember(std::string_view token, session_auth_ptr auth) {
  if (token.size() > max_token_bytes) return;
  auto key = digest(token);
  std::lock_guard lock(mutex_);
  auto [it, fresh] = entries_.insert_or_assign(key, std::move(auth));
  if (!fresh) return;
  order_.push_back(std::move(key));
  while (entries_.size() > capacity_ && !order_.empty()) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

void verified_tokens::forget(std::string_view token) {
  auto key = digest(token);
  std::lock_guard lock(mutex_);
  if (entries_.erase(key) == 0) return;
  if (auto it = std::find(order_.begin(), order_.end(), key); it != order_.end()) order_.erase(it);
}

void verified_tokens::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  order_.clear();
}

std::size_t verified_tokens::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace tidings::broker
