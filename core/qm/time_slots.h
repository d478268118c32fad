// time_slots.h — time-of-day slots (design document §6 "Time Of Day Fetching").
//
// The LCC divides a rolling period (qm.slot_period, a day by default) into qm.slots
// equal slots, counted from the Unix epoch in UTC. A URL's `tod` names the slots in
// which it may be fetched as half-open ranges ("0-8,22-24"); empty means any time.
// Pure functions; no clock of their own.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lcc/types.h"

namespace lcc::qm {

class TimeSlots {
 public:
  TimeSlots(std::int32_t slots, Millis period);

  std::int32_t count() const { return slots_; }
  Millis slotLength() const { return slot_len_; }
  Millis period() const { return period_; }

  // The slot `t` falls in.
  TimeSlot slotAt(WallTime t) const;
  // Time from `t` until slot `s` next begins (0 when `t` is in `s`... no: the next
  // beginning strictly after t's slot start; 0 only if t is exactly at its start).
  Millis untilSlotStart(WallTime t, TimeSlot s) const;

  // A parsed `tod` window: one flag per slot. An empty or unparsable `tod`, or one
  // that names no slot, is "any time".
  struct Window {
    std::vector<bool> open;  // empty: any time
    bool any() const { return open.empty(); }
  };
  Window parse(std::string_view tod) const;

  bool inWindow(const Window& w, TimeSlot s) const;
  // The first slot after `s` (cyclic, s itself only after a full turn) in which `w`
  // is open.
  TimeSlot nextOpen(const Window& w, TimeSlot s) const;
  // Where a new queue row for a URL with window `w` goes at time `t`: kSlotNow when
  // the window is open, else the slot at which it next opens.
  TimeSlot startSlot(std::string_view tod, WallTime t) const;

 private:
  std::int32_t slots_;
  Millis period_;
  Millis slot_len_;
};

}  // namespace lcc::qm
