// sim_clock.h — a Clock whose time moves only when a test says so.
//
// advance(d) moves both wall and monotonic time forward by d and runs every timer
// that falls due, in due order (FIFO for equal times), on the calling thread.
// Timers scheduled by a running callback fire in the same advance() if they fall
// due within it. Thread-safe, so code under test may schedule from its threads.
#pragma once

#include <map>
#include <mutex>

#include "lcc/clock.h"

namespace lcc::testing {

class SimClock final : public Clock {
 public:
  // Starts at `start` wall time (default 2024-05-01T12:00:00Z).
  explicit SimClock(WallTime start = fromUnixMillis(1714564800000));

  WallTime now() const override;
  MonoTime monoNow() const override;
  TimerId schedule(Millis delay, std::function<void()> fn) override;
  bool cancel(TimerId id) override;

  void advance(Millis d);
  // Sets the wall clock (monotonic time is not affected), e.g. to a time of day.
  void setWall(WallTime t);
  std::size_t pendingTimers() const;

 private:
  mutable std::mutex mu_;
  WallTime wall_;
  Millis mono_{0};
  TimerId next_id_ = 1;
  std::map<std::pair<Millis, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, Millis> due_by_id_;
};

}  // namespace lcc::testing
