// Time-of-day windows open at the slot boundary of the wall clock (issue 15 §1), not
// qm.merge_interval after the process started: start times that are not aligned,
// a one-slot window, and a window across the period boundary (midnight UTC).
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

constexpr std::int64_t kMinuteMs = 60 * 1000;

class QmSlotBoundaries : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    options_.merge_interval = Millis(kHourMs);
  }
  // Starts the QM at `wall` with timers running and one BOT-M link.
  void startAt(WallTime wall) {
    clock_.setWall(wall);
    start();
    qm_->startTimers();
    qm_->linkUp(1, "m1", 4);
  }
  // Moves the clock to `wall` (timers fire on the way).
  void advanceTo(WallTime wall) { clock_.advance(wall - clock_.now()); }
};

TEST_F(QmSlotBoundaries, AOneSlotWindowOpensAtItsSlotStartNotAMergeIntervalAfterTheStart) {
  startAt(kDayStart + Millis(12 * kHourMs + 17 * kMinuteMs + 23 * 1000));  // 12:17:23
  submit(makeSet(1, {update(1, "http://a/one", std::nullopt, "13-14")}, 1));
  EXPECT_TRUE(botm_.fetches.empty());
  advanceTo(kDayStart + Millis(13 * kHourMs - 1));  // 12:59:59.999
  EXPECT_TRUE(botm_.fetches.empty()) << "opened before its window";
  advanceTo(kDayStart + Millis(13 * kHourMs));  // 13:00:00
  EXPECT_EQ(fetchOne("f1"), "http://a/one") << "the window opened late";
}

TEST_F(QmSlotBoundaries, AOneSlotWindowIsNotMissedWhenTheStartIsJustBeforeItsSlot) {
  // Started 10 s before 13:00: a merge every hour from here would come at 13:59:50,
  // seconds before the window closes, and its fetch would find it closed.
  startAt(kDayStart + Millis(13 * kHourMs - 10 * 1000));
  submit(makeSet(1, {update(1, "http://a/one", std::nullopt, "13-14")}, 1));
  advanceTo(kDayStart + Millis(13 * kHourMs + 1));
  EXPECT_EQ(fetchOne("f1"), "http://a/one");
}

TEST_F(QmSlotBoundaries, AWindowAcrossThePeriodBoundaryOpensOnTimeEveryDay) {
  startAt(kDayStart + Millis(21 * kHourMs + 41 * kMinuteMs + 7 * 1000));  // 21:41:07, day 1
  for (int day = 1; day <= 3; ++day) {
    SCOPED_TRACE("day " + std::to_string(day));
    const WallTime midnight = kDayStart + Millis(day * 24 * kHourMs);
    submit(makeSet(1, {update(1, "http://a/night", 100 + day, "0-1")}, static_cast<std::uint64_t>(day)));
    advanceTo(midnight - Millis(1));
    EXPECT_TRUE(botm_.fetches.empty()) << "opened before midnight";
    advanceTo(midnight);
    EXPECT_EQ(fetchOne("f" + std::to_string(day)), "http://a/night") << "not fetched at 00:00";
    advanceTo(midnight + Millis(21 * kHourMs + 41 * kMinuteMs));  // the next evening
  }
}

TEST_F(QmSlotBoundaries, SlotsOfAnHourPeriodOpenAtTheirBoundaryToo) {
  options_.slots = 4;
  options_.slot_period = Millis(kHourMs);  // four 15-minute slots
  options_.merge_interval = Millis(kHourMs);
  startAt(kDayStart + Millis(12 * kHourMs + 3 * kMinuteMs + 3 * 1000));  // 12:03:03, slot 0
  submit(makeSet(1, {update(1, "http://a/q3", std::nullopt, "3-4")}, 1));
  advanceTo(kDayStart + Millis(12 * kHourMs + 45 * kMinuteMs - 1));
  EXPECT_TRUE(botm_.fetches.empty());
  advanceTo(kDayStart + Millis(12 * kHourMs + 45 * kMinuteMs));
  EXPECT_EQ(fetchOne("f1"), "http://a/q3");
}

}  // namespace
}  // namespace lcc::qm
