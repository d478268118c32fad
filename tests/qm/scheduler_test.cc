#include "qm/scheduler.h"

#include <gtest/gtest.h>

#include "common/config/config.h"
#include "qm/qm_options.h"
#include "support/sim_clock.h"

namespace lcc::qm {
namespace {

using lcc::testing::SimClock;

// Each provider on a host of its own, unless a test says otherwise.
std::string host(ProviderId pid) { return "p" + std::to_string(pid) + ".example:80"; }

SchedulerOptions opts(std::uint32_t inflight = 1) {
  const QmOptions q = QmOptions::fromConfig(Config::defaults());
  SchedulerOptions o{q.provider_inflight, q.botm_overload_pct, q.bandwidth_tick, q.bandwidth_horizon, q.host_inflight};
  o.provider_inflight = inflight;
  o.botm_overload_pct = 100;
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
    s.dispatched(*p, host(*p));
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
  s.dispatched(1, host(1));
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
    s.dispatched(*p, host(*p));
    ++n;
  }
  EXPECT_EQ(n, 3);
}

TEST(Scheduler, CapacityTimesOverloadCapsTheTotal) {
  SimClock clock;
  auto o = opts(1);
  o.botm_overload_pct = 150;
  Scheduler s(clock, o);
  s.setCapacity(4);
  for (ProviderId p = 1; p <= 10; ++p) {
    s.setProvider(p, 0, 0);
    s.addReadySet(p, p);
  }
  int n = 0;
  while (auto p = s.pick()) {
    s.dispatched(*p, host(*p));
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
  s.dispatched(1, host(1));
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
  s.dispatched(1, host(1));
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
  s.dispatched(1, host(1));
  EXPECT_EQ(s.finished(1, 400), Scheduler::After::kReady);  // 0.4 s owed: under a tick
  s.dispatched(1, host(1));
  EXPECT_EQ(s.finished(1, 400), Scheduler::After::kReady);
  s.dispatched(1, host(1));
  EXPECT_EQ(s.finished(1, 400), Scheduler::After::kDelayed);  // 1.2 s owed
}

TEST(Scheduler, DelayPastTheHorizonIsReportedNotHeld) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(1);
  s.setProvider(1, 0, 10);  // 10 bytes/s
  s.addReadySet(1, 1);
  s.dispatched(1, host(1));
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
  s.dispatched(1, host(1));
  s.blocked(1);  // its only URL is in flight
  EXPECT_FALSE(s.pick());
  s.addReadySet(1, 2);
  EXPECT_EQ(s.pick(), ProviderId(1));
}

// --- hosts (qm.host_inflight, issue 29 §5) ---

// The owner's turn as queue_manager_dispatch.cc takes it: pick a provider; its next row
// is on `on`; it goes out when the host has room, else the provider waits for the host.
std::optional<ProviderId> dispatchOn(Scheduler& s, const std::string& on) {
  for (int guard = 0; guard < 100; ++guard) {
    auto p = s.pick();
    if (!p) return std::nullopt;
    if (s.hostHasRoom(on)) {
      s.dispatched(*p, on);
      return p;
    }
    s.waitForHost(*p, on);
  }
  ADD_FAILURE() << "pick() kept answering providers that wait for a host";
  return std::nullopt;
}

TEST(Scheduler, ProvidersOnOneHostShareItsLimit) {
  SimClock clock;
  SchedulerOptions o = opts(4);  // each provider could have 4 out
  o.host_inflight = 1;
  Scheduler s(clock, o);
  s.setCapacity(100);
  for (ProviderId p = 1; p <= 3; ++p) {
    s.setProvider(p, 0, 0);
    s.addReadySet(p, p);
  }
  const std::string shared = "www.example.org:80";
  EXPECT_EQ(dispatchOn(s, shared), ProviderId(1));
  EXPECT_FALSE(dispatchOn(s, shared)) << "a second fetch on the host went out";
  EXPECT_EQ(s.hostInFlight(shared), 1u);
  EXPECT_EQ(s.inFlight(), 1u);
  EXPECT_EQ(s.eligibleCount(), 0u) << "all three wait: 1 for its own fetch's host, 2 and 3 for the host";
  // Another host is not held back by this one.
  s.setProvider(4, 0, 0);
  s.addReadySet(4, 4);
  EXPECT_EQ(dispatchOn(s, "other.example:80"), ProviderId(4));
  // The fetch ends: the waiters are eligible again, the oldest set first.
  s.hostDone(shared);
  (void)s.finished(1, 0);
  EXPECT_EQ(dispatchOn(s, shared), ProviderId(1));
  EXPECT_FALSE(dispatchOn(s, shared));
  s.hostDone(shared);
  (void)s.finished(1, 0);
  s.removeReadySet(1, 1);  // provider 1 has nothing more
  EXPECT_EQ(dispatchOn(s, shared), ProviderId(2));
  EXPECT_EQ(s.hostInFlight(shared), 1u);
  s.hostDone(shared);
  (void)s.finished(2, 0);
  s.hostDone("other.example:80");
  (void)s.finished(4, 0);
  EXPECT_EQ(s.hostCount(), 0u) << "no fetch out and nobody waiting: no host record is kept";
}

TEST(Scheduler, AHostLimitAboveOneAndPriorityAmongTheWaiters) {
  SimClock clock;
  SchedulerOptions o = opts(1);
  o.host_inflight = 2;
  Scheduler s(clock, o);
  s.setCapacity(100);
  for (ProviderId p = 1; p <= 3; ++p) s.setProvider(p, p == 3 ? 9 : 0, 0);
  for (ProviderId p = 1; p <= 2; ++p) s.addReadySet(p, p);
  const std::string shared = "[2001:db8::1]:8080";
  EXPECT_EQ(dispatchOn(s, shared), ProviderId(1));
  EXPECT_EQ(dispatchOn(s, shared), ProviderId(2));
  s.addReadySet(3, 3);  // higher priority, arrives while the host is full
  EXPECT_FALSE(dispatchOn(s, shared));
  s.addReadySet(1, 10);
  EXPECT_FALSE(dispatchOn(s, shared)) << "a new set does not make room on the host";
  s.hostDone(shared);
  (void)s.finished(2, 0);
  EXPECT_EQ(dispatchOn(s, shared), ProviderId(3)) << "the free slot goes to the best waiter";
  EXPECT_EQ(s.hostInFlight(shared), 2u);
}

TEST(Scheduler, ALostFetchFreesItsHost) {
  SimClock clock;
  Scheduler s(clock, opts());
  s.setCapacity(10);
  s.setProvider(1, 0, 0);
  s.setProvider(2, 0, 0);
  s.addReadySet(1, 1);
  s.addReadySet(2, 2);
  EXPECT_EQ(dispatchOn(s, "h:80"), ProviderId(1));
  EXPECT_FALSE(dispatchOn(s, "h:80"));
  s.lost(1);
  s.hostDone("h:80");
  EXPECT_EQ(s.hostInFlight("h:80"), 0u);
  EXPECT_TRUE(dispatchOn(s, "h:80"));
}

TEST(Scheduler, PolitenessHostIsHostAndPortOfTheNormalForm) {
  EXPECT_EQ(politenessHost("http://www.example.org/a"), "www.example.org:80");
  EXPECT_EQ(politenessHost("http://www.example.org:8080/a"), "www.example.org:8080");
  EXPECT_EQ(politenessHost("https://www.example.org/a?x"), "www.example.org:443");
  EXPECT_EQ(politenessHost("http://127.0.0.1:5000/"), "127.0.0.1:5000");
  EXPECT_EQ(politenessHost("http://[::1]:81/x"), "[::1]:81");
  EXPECT_EQ(politenessHost("not a url"), "not a url") << "its own host";
}

}  // namespace
}  // namespace lcc::qm
