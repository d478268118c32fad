// fetch_leases.h — a robot's fetch leases (issue 27 §3; docs/reliability.md, "Fetch
// leases"): when each running fetch must end. Pure policy: no clock, no fetcher; the
// caller passes the monotonic time and does what the answers say (RobotCore: cancels
// the fetches expired() returns, arms one timer at earliest()).
//
// A fetch comes with a lease, a duration counted from when the robot received it; a
// renewal from the BOT-M (<ping lease>) moves every deadline to now + its lease. A
// fetch whose deadline passed is expired: the robot starts nothing for it and ends what
// it started (its URL may be handed to another host by then).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lcc/clock.h"

namespace lcc::bot {

class FetchLeases {
 public:
  // A fetch received at `now` with `lease` (zero: no lease, never expires here).
  void add(std::uint64_t fetch, MonoTime now, Millis lease);
  // Every fetch with a lease: until now + lease.
  void renew(MonoTime now, Millis lease);
  // The fetch ended (answered or cancelled): forgotten.
  void remove(std::uint64_t fetch) { until_.erase(fetch); }
  // The fetches whose lease has run out at `now`, forgotten here.
  std::vector<std::uint64_t> expired(MonoTime now);
  // The first deadline still held (none: no fetch with a lease).
  std::optional<MonoTime> earliest() const;
  std::size_t size() const { return until_.size(); }

 private:
  std::unordered_map<std::uint64_t, MonoTime> until_;
};

}  // namespace lcc::bot
