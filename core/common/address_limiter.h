// address_limiter.h — counts events per source address in a sliding window and says
// when an address has had too many (abuse limits, docs/security.md): failed UNS `init`
// authentications (uns.auth_failures_per_minute, uns.auth_cooldown) and POST /register
// (rs.register_per_minute). A policy class: events in, decisions out; no sockets.
//
// An address may have `max_events` events within `window`. The event that reaches
// max_events blocks it:
//   - cooldown > 0: for `cooldown` from that event; then its count starts from zero;
//   - cooldown = 0: until the oldest of its events leaves the window.
// max_events = 0 turns the limiter off (every check allows, nothing is tracked).
// Memory is bounded: at most `max_addresses` are tracked; past that, the address
// touched least recently is forgotten.
// TIME: the Clock's monoNow(). THREADS: thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "lcc/clock.h"

namespace lcc {

struct AddressLimiterOptions {
  std::uint64_t max_events = 0;     // 0: off
  Millis window{60000};
  Millis cooldown{0};               // 0: blocked only while the window is full
  std::size_t max_addresses = 10000;
};

class AddressLimiter {
 public:
  struct Decision {
    bool allowed = true;
    Millis retry_after{0};  // when !allowed: how long until the address may try again
  };

  AddressLimiter(AddressLimiterOptions options, Clock* clock);

  // Before acting for `address`: may it go on?
  Decision check(const std::string& address);
  // One event of `address` (a failed authentication, a registration). Returns the
  // decision for its next attempt.
  Decision record(const std::string& address);

  bool enabled() const { return options_.max_events > 0; }
  std::size_t trackedAddresses() const;

 private:
  struct Entry {
    std::deque<MonoTime> events;  // within the window, oldest first
    MonoTime blocked_until{};
    bool blocked = false;
    std::list<std::string>::iterator lru;
  };
  // Drops what the window and the cool-down no longer hold; returns the decision now.
  Decision refresh(Entry& e, MonoTime now) const;
  Entry& touch(const std::string& address);

  const AddressLimiterOptions options_;
  Clock* clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recently touched first
};

}  // namespace lcc
