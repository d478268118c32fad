// lcc/clock.h — time, injected (docs/architecture.md rule 5).
//
// WHO: every component and plugin that looks at time or waits. Production uses the
// system clock (core/common/system_clock.h); tests use a simulated clock whose
// advance() fires due timers deterministically, so slot, bandwidth and retry tests
// run in milliseconds.
// THREADS: all methods are thread-safe. A scheduled callback runs on the clock's own
// timer thread (system clock) or inside advance() (simulated clock); it must be short
// and post real work to its owner's strand. Callbacks never run inside schedule().
#pragma once

#include <cstdint>
#include <functional>

#include "lcc/types.h"

namespace lcc {

using TimerId = std::uint64_t;  // 0 is never a valid timer

class Clock {
 public:
  virtual ~Clock() = default;
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;

  // Wall-clock time: time-of-day slots, stored times, protocol timestamps.
  virtual WallTime now() const = 0;
  // Monotonic time: intervals, rates, deadlines.
  virtual MonoTime monoNow() const = 0;

  // Runs `fn` once, no earlier than `delay` from now. Returns an id for cancel().
  virtual TimerId schedule(Millis delay, std::function<void()> fn) = 0;
  // Cancels a timer that has not fired. Returns false if it already ran or is unknown.
  virtual bool cancel(TimerId id) = 0;
};

}  // namespace lcc
