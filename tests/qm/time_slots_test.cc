#include "qm/time_slots.h"

#include <gtest/gtest.h>

namespace lcc::qm {
namespace {

constexpr std::int64_t kHourMs = 3600 * 1000;
// 2024-05-01T00:00:00Z, a day boundary.
const WallTime kMidnight = fromUnixMillis(1714521600000);

TEST(TimeSlots, HourOfDaySlotsFromUtcMidnight) {
  TimeSlots ts(24, Millis(24 * kHourMs));
  EXPECT_EQ(ts.slotAt(kMidnight), 0);
  EXPECT_EQ(ts.slotAt(kMidnight + Millis(kHourMs * 13 + 5)), 13);
  EXPECT_EQ(ts.slotAt(kMidnight + Millis(kHourMs * 24 - 1)), 23);
  EXPECT_EQ(ts.untilSlotStart(kMidnight + Millis(kHourMs * 13 + 5), 14), Millis(kHourMs - 5));
  EXPECT_EQ(ts.untilSlotStart(kMidnight + Millis(kHourMs * 13), 2), Millis(kHourMs * 13));
}

TEST(TimeSlots, WindowParsingAndNextOpenSlot) {
  TimeSlots ts(24, Millis(24 * kHourMs));
  auto w = ts.parse("0-8,22-24");
  ASSERT_FALSE(w.any());
  EXPECT_TRUE(ts.inWindow(w, 0));
  EXPECT_TRUE(ts.inWindow(w, 7));
  EXPECT_FALSE(ts.inWindow(w, 8));
  EXPECT_TRUE(ts.inWindow(w, 23));
  EXPECT_EQ(ts.nextOpen(w, 8), 22);
  EXPECT_EQ(ts.nextOpen(w, 23), 0);
  EXPECT_TRUE(ts.parse("").any());
  EXPECT_TRUE(ts.parse("junk").any());   // nothing named: any time
  EXPECT_TRUE(ts.parse("30-40").any());  // outside the configured slots
}

TEST(TimeSlots, StartSlotIsNowInsideTheWindowElseTheNextOpening) {
  TimeSlots ts(24, Millis(24 * kHourMs));
  EXPECT_EQ(ts.startSlot("0-8", kMidnight + Millis(kHourMs * 3)), kSlotNow);
  EXPECT_EQ(ts.startSlot("0-8", kMidnight + Millis(kHourMs * 9)), 0);
  EXPECT_EQ(ts.startSlot("10-12", kMidnight + Millis(kHourMs * 9)), 10);
  EXPECT_EQ(ts.startSlot("", kMidnight + Millis(kHourMs * 9)), kSlotNow);
}

}  // namespace
}  // namespace lcc::qm
