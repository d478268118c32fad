// AddressLimiter on simulated time: the sliding window, the cool-down, the cap on
// tracked addresses, and "off".
#include "common/address_limiter.h"

#include <gtest/gtest.h>

#include "support/sim_clock.h"

namespace lcc {
namespace {

constexpr Millis kSec{1000};

TEST(AddressLimiter, TheEventThatReachesTheLimitStartsTheCooldown) {
  testing::SimClock clock;
  AddressLimiter lim({.max_events = 3, .window = 60 * kSec, .cooldown = 300 * kSec}, &clock);
  EXPECT_TRUE(lim.check("10.0.0.1").allowed);
  EXPECT_TRUE(lim.record("10.0.0.1").allowed);
  clock.advance(10 * kSec);
  EXPECT_TRUE(lim.record("10.0.0.1").allowed);
  EXPECT_TRUE(lim.check("10.0.0.1").allowed);
  auto third = lim.record("10.0.0.1");
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.retry_after, 300 * kSec);
  // Another address is not touched.
  EXPECT_TRUE(lim.check("10.0.0.2").allowed);
  clock.advance(299 * kSec);
  auto still = lim.check("10.0.0.1");
  EXPECT_FALSE(still.allowed);
  EXPECT_EQ(still.retry_after, 1 * kSec);
  // Events while blocked do not lengthen the cool-down.
  EXPECT_FALSE(lim.record("10.0.0.1").allowed);
  clock.advance(1 * kSec);
  EXPECT_TRUE(lim.check("10.0.0.1").allowed);
  // A fresh start: two more events are allowed again.
  EXPECT_TRUE(lim.record("10.0.0.1").allowed);
  EXPECT_TRUE(lim.record("10.0.0.1").allowed);
  EXPECT_FALSE(lim.record("10.0.0.1").allowed);
}

TEST(AddressLimiter, EventsOlderThanTheWindowDoNotCount) {
  testing::SimClock clock;
  AddressLimiter lim({.max_events = 3, .window = 60 * kSec, .cooldown = 300 * kSec}, &clock);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(lim.record("a").allowed) << i;
    EXPECT_TRUE(lim.record("a").allowed) << i;
    clock.advance(60 * kSec);  // both leave the window
  }
  // Two within 59 s, then the third 59 s after the first: still inside: blocked.
  EXPECT_TRUE(lim.record("b").allowed);
  clock.advance(30 * kSec);
  EXPECT_TRUE(lim.record("b").allowed);
  clock.advance(29 * kSec);
  EXPECT_FALSE(lim.record("b").allowed);
}

TEST(AddressLimiter, WithoutCooldownTheWindowDecidesAndSaysWhen) {
  testing::SimClock clock;
  AddressLimiter lim({.max_events = 2, .window = 60 * kSec, .cooldown = Millis(0)}, &clock);
  EXPECT_TRUE(lim.record("a").allowed);
  clock.advance(20 * kSec);
  auto second = lim.record("a");
  EXPECT_FALSE(second.allowed);
  EXPECT_EQ(second.retry_after, 40 * kSec);  // when the first leaves the window
  clock.advance(39 * kSec);
  EXPECT_FALSE(lim.check("a").allowed);
  clock.advance(1 * kSec);
  EXPECT_TRUE(lim.check("a").allowed);
  auto third = lim.record("a");
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.retry_after, 20 * kSec);  // the second leaves at 80 s
}

TEST(AddressLimiter, TrackedAddressesAreCappedOldestForgottenFirst) {
  testing::SimClock clock;
  AddressLimiter lim({.max_events = 1, .window = 60 * kSec, .cooldown = 600 * kSec, .max_addresses = 3}, &clock);
  EXPECT_FALSE(lim.record("a").allowed);
  EXPECT_FALSE(lim.record("b").allowed);
  EXPECT_FALSE(lim.record("c").allowed);
  EXPECT_FALSE(lim.check("a").allowed);  // a check does not refresh an address's place
  EXPECT_EQ(lim.trackedAddresses(), 3u);
  EXPECT_FALSE(lim.record("b").allowed);  // b is touched: a is now the oldest
  EXPECT_FALSE(lim.record("d").allowed);
  EXPECT_EQ(lim.trackedAddresses(), 3u);
  EXPECT_TRUE(lim.check("a").allowed);    // forgotten
  EXPECT_FALSE(lim.check("b").allowed);
  EXPECT_FALSE(lim.check("c").allowed);
  EXPECT_FALSE(lim.check("d").allowed);
  for (int i = 0; i < 1000; ++i) (void)lim.record(std::to_string(i) + "x");
  EXPECT_EQ(lim.trackedAddresses(), 3u);
}

TEST(AddressLimiter, ZeroTurnsItOff) {
  testing::SimClock clock;
  AddressLimiter lim({.max_events = 0, .window = 60 * kSec, .cooldown = 300 * kSec}, &clock);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(lim.record("a").allowed);
  EXPECT_TRUE(lim.check("a").allowed);
  EXPECT_EQ(lim.trackedAddresses(), 0u);
  EXPECT_FALSE(lim.enabled());
}

}  // namespace
}  // namespace lcc
