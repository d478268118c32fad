#include "uns/auth_cache.h"

#include <sodium.h>

namespace lcc::uns {

AuthCache::AuthCache(std::size_t capacity) : capacity_(capacity) {
  if (sodium_init() < 0) std::abort();
  randombytes_buf(key_.data(), key_.size());
}

AuthCache::Digest AuthCache::digestOf(std::string_view password) const {
  Digest d;
  crypto_generichash(d.data(), d.size(), reinterpret_cast<const unsigned char*>(password.data()), password.size(),
                     key_.data(), key_.size());
  return d;
}

bool AuthCache::knows(ProviderId pid, std::string_view stored_hash, std::string_view password) {
  if (capacity_ == 0) return false;
  const Digest d = digestOf(password);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pid);
  if (it == entries_.end()) return false;
  if (it->second.stored_hash != stored_hash) {  // the password changed since
    lru_.erase(it->second.lru);
    entries_.erase(it);
    return false;
  }
  if (sodium_memcmp(it->second.digest.data(), d.data(), d.size()) != 0) return false;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return true;
}

void AuthCache::remember(ProviderId pid, std::string_view stored_hash, std::string_view password) {
  if (capacity_ == 0) return;
  const Digest d = digestOf(password);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pid);
  if (it != entries_.end()) {
    it->second.stored_hash.assign(stored_hash);
    it->second.digest = d;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  if (entries_.size() >= capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(pid);
  entries_.emplace(pid, Entry{std::string(stored_hash), d, lru_.begin()});
}

void AuthCache::forget(ProviderId pid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pid);
  if (it == entries_.end()) return;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

std::size_t AuthCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace lcc::uns
