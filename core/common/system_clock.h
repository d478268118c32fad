// system_clock.h — the production Clock: real time, timers on one timer thread.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "lcc/clock.h"

namespace lcc {

class SystemClock final : public Clock {
 public:
  SystemClock();
  ~SystemClock() override;  // cancels pending timers and joins the thread

  WallTime now() const override;
  MonoTime monoNow() const override;
  TimerId schedule(Millis delay, std::function<void()> fn) override;
  bool cancel(TimerId id) override;

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  TimerId next_id_ = 1;
  // (due, id) -> callback; ordered by due time, then id (FIFO for equal times).
  std::map<std::pair<MonoTime, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, MonoTime> due_by_id_;
  std::thread thread_;
};

}  // namespace lcc
