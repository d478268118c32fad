#include "qm/time_slots.h"

#include <algorithm>
#include <charconv>

namespace lcc::qm {

TimeSlots::TimeSlots(std::int32_t slots, Millis period)
    : slots_(std::max<std::int32_t>(1, slots)), period_(std::max<Millis>(Millis(1), period)) {
  slot_len_ = std::max<Millis>(Millis(1), period_ / slots_);
}

TimeSlot TimeSlots::slotAt(WallTime t) const {
  std::int64_t ms = toUnixMillis(t) % period_.count();
  if (ms < 0) ms += period_.count();
  auto s = static_cast<TimeSlot>(ms / slot_len_.count());
  return std::min(s, slots_ - 1);
}

Millis TimeSlots::untilSlotStart(WallTime t, TimeSlot s) const {
  std::int64_t ms = toUnixMillis(t) % period_.count();
  if (ms < 0) ms += period_.count();
  std::int64_t start = static_cast<std::int64_t>(s) * slot_len_.count();
  std::int64_t d = start - ms;
  if (d <= 0) d += period_.count();
  return Millis(d);
}

TimeSlots::Window TimeSlots::parse(std::string_view tod) const {
  Window w;
  if (tod.empty()) return w;
  std::vector<bool> open(static_cast<std::size_t>(slots_), false);
  bool any_named = false;
  std::size_t pos = 0;
  while (pos <= tod.size()) {
    std::size_t comma = tod.find(',', pos);
    std::string_view part = tod.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    std::size_t dash = part.find('-');
    if (dash != std::string_view::npos) {
      int a = 0, b = 0;
      auto ra = std::from_chars(part.data(), part.data() + dash, a);
      auto rb = std::from_chars(part.data() + dash + 1, part.data() + part.size(), b);
      if (ra.ec == std::errc() && rb.ec == std::errc() && a >= 0 && b > a) {
        for (int i = a; i < b && i < slots_; ++i) {
          open[static_cast<std::size_t>(i)] = true;
          any_named = true;
        }
      }
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (any_named) w.open = std::move(open);
  return w;
}

bool TimeSlots::inWindow(const Window& w, TimeSlot s) const {
  if (w.any()) return true;
  if (s < 0 || s >= slots_) return false;
  return w.open[static_cast<std::size_t>(s)];
}

TimeSlot TimeSlots::nextOpen(const Window& w, TimeSlot s) const {
  if (w.any()) return (s + 1) % slots_;
  for (std::int32_t k = 1; k <= slots_; ++k) {
    TimeSlot c = (s + k) % slots_;
    if (w.open[static_cast<std::size_t>(c)]) return c;
  }
  return s;
}

TimeSlot TimeSlots::startSlot(std::string_view tod, WallTime t) const {
  Window w = parse(tod);
  TimeSlot now = slotAt(t);
  if (inWindow(w, now)) return kSlotNow;
  return nextOpen(w, now);
}

}  // namespace lcc::qm
