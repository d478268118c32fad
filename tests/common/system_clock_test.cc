// The production clock's timer thread: what a daemon sees of it is that cancelled
// timers never run and the others run in due order, whatever the timing of cancel().
#include "common/system_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace lcc {
namespace {

using namespace std::chrono_literals;

// Waits for a timer's callback, bounded so a clock that lost it fails instead of hanging.
bool waitFor(std::future<void>& f) { return f.wait_for(10s) == std::future_status::ready; }

TEST(SystemClock, ATimerCancelledWhileTheThreadWaitsForItNeverRunsAndLaterOnesDo) {
  // The timer thread sleeps until the first timer is due; cancel() erases that timer
  // meanwhile. When the thread wakes at the old deadline, it must not touch the erased
  // timer (ASan saw it read the deadline from the freed map node), and must go on.
  SystemClock clock;
  for (int round = 0; round < 3; ++round) {
    std::atomic<bool> cancelled_ran{false};
    TimerId first = clock.schedule(Millis(30), [&] { cancelled_ran = true; });
    EXPECT_TRUE(clock.cancel(first));
    std::this_thread::sleep_for(60ms);  // past the cancelled deadline: the thread woke
    std::promise<void> ran;
    std::future<void> done = ran.get_future();
    clock.schedule(Millis(1), [&] { ran.set_value(); });
    ASSERT_TRUE(waitFor(done)) << "round " << round;
    EXPECT_FALSE(cancelled_ran.load()) << "round " << round;
    EXPECT_FALSE(clock.cancel(first)) << "a cancelled timer is gone";
  }
}

TEST(SystemClock, TimersRunInDueOrderAndACancelledOneIsSkipped) {
  SystemClock clock;
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> last;
  std::future<void> done = last.get_future();
  auto record = [&](int n) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(n);
  };
  clock.schedule(Millis(40), [&] { record(3); last.set_value(); });
  TimerId skipped = clock.schedule(Millis(20), [&] { record(99); });
  clock.schedule(Millis(10), [&] { record(1); });
  clock.schedule(Millis(30), [&] { record(2); });
  EXPECT_TRUE(clock.cancel(skipped));
  ASSERT_TRUE(waitFor(done));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace lcc
