#include "qm/scheduler.h"

#include <gtest/gtest.h>

#include "support/sim_clock.h"

namespace lcc::qm {
namespace {

using lcc::testing::SimClock;

SchedulerOptions opts(std::uint32_t inflight = 1) {
  SchedulerOptions o;
  o.provider_inflight = inflight;
  o.overload_pct = 100;
  o.bandwidth_tick = Millis(1000);
  o.bandwidth_horizon = Millis(60 * 1000);
  return o;
}

TEST(Scheduler, NothingGoesOutWithoutCapacity) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setProvider(1, 0, 0);
  s.addReadySet(1, 10);
  EXPECT_FALSE(s.pick());
  s.setCapacity(1);
  EXPECT_EQ(s.pick(), ProviderId(1));
}

TEST(Scheduler, HigherPriorityFirstThenSubmissionOrder) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(10);
  s.setProvider(1, 0, 0);
  s.setProvider(2, 5, 0);
  s.setProvider(3, 0, 0);
  s.addReadySet(3, 7);   // submitted before provider 1's set
  s.addReadySet(1, 9);
  s.addReadySet(2, 20);  // latest, but highest priority
  std::vector<ProviderId> order;
  while (auto p = s.pick()) {
    order.push_back(*p);
    s.dispatched(*p);
  }
  EXPECT_EQ(order, (std::vector<ProviderId>{2, 3, 1}));
}

TEST(Scheduler, SerialFetchingPerProvider) {
  SimClock clock;
  Scheduler s(clock, opts(1));
  s.setCapacity(10);
  s.setProvider(1, 0, 0);
  s.addReadySet(1, 1);
  s.addReadySet(1, 2);
  ASSERT_EQ(s.pick(), ProviderId(1));
  s.dispatched(1);
  EXPECT_FALSE(s.pick()) << "a second URL of the same provider went out in parallel";
  EXPECT_EQ(s.finished(1, 0), Scheduler::After::kReady);
  EXPECT_EQ(s.pick(), ProviderId(1));
}

TEST(Scheduler, ProviderInflightAllowsThatManyAtOnce) {
  SimClock clock;
  Scheduler s(clock, opts(3));
  s.setCapacity(10);
  s.setProvider(1, 0, 0);
  s.addReadySet(1, 1);
  int n = 0;
  while (auto p = s.pick()) {
    s.dispatched(*p);
    ++n;
  }
  EXPECT_EQ(n, 3);
}

TEST(Scheduler, CapacityTimesOverloadCapsTheTotal) {
  SimClock clock;
  auto o = opts(1);
  o.overload_pct = 150;
  Scheduler s(clock, o);
  s.setCapacity(4);
  for (ProviderId p = 1; p <= 10; ++p) {
    s.setProvider(p, 0, 0);
    s.addReadySet(p, p);
  }
  int n = 0;
  while (auto p = s.pick()) {
    s.dispatched(*p);
    ++n;
  }
  EXPECT_EQ(n, 6);
  EXPECT_EQ(s.inFlight(), 6u);
}

TEST(Scheduler, ProviderPutBackWhenAHigherPriorityArrives) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(1);
  s.setProvider(1, 0, 0);
  s.addReadySet(1, 1);
  ASSERT_EQ(s.pick(), ProviderId(1));
  s.dispatched(1);
  s.setProvider(2, 9, 0);
  s.addReadySet(2, 2);
  EXPECT_FALSE(s.pick());  // the only slot is busy
  (void)s.finished(1, 0);
  EXPECT_EQ(s.pick(), ProviderId(2)) << "the low-priority provider kept its slot";
}

TEST(Scheduler, BandwidthWheelHoldsAProviderForItsDebt) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(1);
  s.setProvider(1, 0, 1000);  // 1000 bytes/s
  s.addReadySet(1, 1);
  s.dispatched(1);
  EXPECT_EQ(s.finished(1, 5000), Scheduler::After::kDelayed);  // owes 5 s
  EXPECT_TRUE(s.isDelayed(1));
  EXPECT_FALSE(s.pick());
  clock.advance(Millis(4000));
  EXPECT_TRUE(s.tick().empty());
  EXPECT_FALSE(s.pick()) << "released before its bandwidth allowed";
  clock.advance(Millis(1000));
  EXPECT_EQ(s.tick(), std::vector<ProviderId>{1});
  EXPECT_EQ(s.pick(), ProviderId(1));
}

TEST(Scheduler, SmallDebtsAccumulateBeforeTheWheel) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(1);
  s.setProvider(1, 0, 1000);
  s.addReadySet(1, 1);
  s.dispatched(1);
  EXPECT_EQ(s.finished(1, 400), Scheduler::After::kReady);  // 0.4 s owed: under a tick
  s.dispatched(1);
  EXPECT_EQ(s.finished(1, 400), Scheduler::After::kReady);
  s.dispatched(1);
  EXPECT_EQ(s.finished(1, 400), Scheduler::After::kDelayed);  // 1.2 s owed
}

TEST(Scheduler, DelayPastTheHorizonIsReportedNotHeld) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(1);
  s.setProvider(1, 0, 10);  // 10 bytes/s
  s.addReadySet(1, 1);
  s.dispatched(1);
  EXPECT_EQ(s.finished(1, 10 * 3600), Scheduler::After::kBeyondHorizon);
  EXPECT_EQ(s.delay(1, Millis(61 * 1000)), Scheduler::After::kBeyondHorizon);
  EXPECT_EQ(s.delay(1, Millis(30 * 1000)), Scheduler::After::kDelayed);
}

TEST(Scheduler, RetryAfterDelayReleasesOnTime) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(1);
  s.setProvider(1, 0, 0);
  s.addReadySet(1, 1);
  clock.advance(Millis(300));  // the wheel is mid-tick
  EXPECT_EQ(s.delay(1, Millis(2000)), Scheduler::After::kDelayed);
  clock.advance(Millis(1999));
  s.tick();
  EXPECT_FALSE(s.pick());
  clock.advance(Millis(1000));
  s.tick();
  EXPECT_EQ(s.pick(), ProviderId(1));
}

TEST(Scheduler, BlockedUntilAFetchEndsOrASetArrives) {
  SimClock clock;
  Scheduler s(clock, opts(2));
  s.setCapacity(5);
  s.setProvider(1, 0, 0);
  s.addReadySet(1, 1);
  s.dispatched(1);
  s.blocked(1);  // its only URL is in flight
  EXPECT_FALSE(s.pick());
  s.addReadySet(1, 2);
  EXPECT_EQ(s.pick(), ProviderId(1));
}

}  // namespace
}  // namespace lcc::qm
