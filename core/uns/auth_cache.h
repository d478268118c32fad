// auth_cache.h — successful checks of slow (Argon2id) provider passwords, remembered
// so that a provider that connects a thousand times pays for one Argon2id check.
//
// An entry is (provider id, the stored hash it was checked against, a keyed BLAKE2b
// digest of the password under a key that lives only in this process). It answers
// only for that exact stored hash: a changed password changes the hash, so the old
// entry is dropped at its next look-up. The plain password is never kept. Bounded:
// past `capacity` entries the least recently used goes. THREADS: thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "lcc/types.h"

namespace lcc::uns {

class AuthCache {
 public:
  explicit AuthCache(std::size_t capacity);

  // True when `password` was remembered for `pid` under this `stored_hash`.
  bool knows(ProviderId pid, std::string_view stored_hash, std::string_view password);
  void remember(ProviderId pid, std::string_view stored_hash, std::string_view password);
  void forget(ProviderId pid);
  std::size_t size() const;

 private:
  using Digest = std::array<std::uint8_t, 32>;
  struct Entry {
    std::string stored_hash;
    Digest digest;
    std::list<ProviderId>::iterator lru;
  };
  Digest digestOf(std::string_view password) const;

  const std::size_t capacity_;
  std::array<std::uint8_t, 32> key_;
  mutable std::mutex mu_;
  std::unordered_map<ProviderId, Entry> entries_;
  std::list<ProviderId> lru_;  // most recently used first
};

}  // namespace lcc::uns
