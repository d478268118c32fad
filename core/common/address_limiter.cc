#include "common/address_limiter.h"

#include <algorithm>

namespace lcc {

AddressLimiter::AddressLimiter(AddressLimiterOptions options, Clock* clock) : options_(options), clock_(clock) {}

AddressLimiter::Decision AddressLimiter::refresh(Entry& e, MonoTime now) const {
  if (e.blocked) {
    if (now < e.blocked_until) {
      return Decision{false, std::chrono::duration_cast<Millis>(e.blocked_until - now)};
    }
    e.blocked = false;
    e.events.clear();  // the cool-down is served: a fresh start
  }
  while (!e.events.empty() && now - e.events.front() >= options_.window) e.events.pop_front();
  if (e.events.size() >= options_.max_events) {
    const MonoTime free_at = e.events.front() + options_.window;
    return Decision{false, std::chrono::duration_cast<Millis>(free_at - now)};
  }
  return Decision{};
}

AddressLimiter::Entry& AddressLimiter::touch(const std::string& address) {
  auto it = entries_.find(address);
  if (it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  if (entries_.size() >= std::max<std::size_t>(options_.max_addresses, 1)) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(address);
  Entry& e = entries_[address];
  e.lru = lru_.begin();
  return e;
}

AddressLimiter::Decision AddressLimiter::check(const std::string& address) {
  if (!enabled()) return Decision{};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(address);
  if (it == entries_.end()) return Decision{};
  return refresh(it->second, clock_->monoNow());
}

AddressLimiter::Decision AddressLimiter::record(const std::string& address) {
  if (!enabled()) return Decision{};
  std::lock_guard<std::mutex> lock(mu_);
  const MonoTime now = clock_->monoNow();
  Entry& e = touch(address);
  if (Decision d = refresh(e, now); !d.allowed) return d;
  e.events.push_back(now);
  if (e.events.size() >= options_.max_events && options_.cooldown.count() > 0) {
    e.blocked = true;
    e.blocked_until = now + options_.cooldown;
  }
  return refresh(e, now);
}

std::size_t AddressLimiter::trackedAddresses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace lcc
