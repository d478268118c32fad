#include "system_clock.h"

#include <pthread.h>

namespace lcc {

SystemClock::SystemClock()
    : thread_([this] {
        ::pthread_setname_np(::pthread_self(), "lcc-clock");  // top -H, perf, gdb
        run();
      }) {}

SystemClock::~SystemClock() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    timers_.clear();
    due_by_id_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

WallTime SystemClock::now() const {
  return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
}

MonoTime SystemClock::monoNow() const { return std::chrono::steady_clock::now(); }

TimerId SystemClock::schedule(Millis delay, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  TimerId id = next_id_++;
  MonoTime due = std::chrono::steady_clock::now() + delay;
  auto it = timers_.emplace(std::make_pair(due, id), std::move(fn)).first;
  due_by_id_.emplace(id, due);
  // The thread waits until the first timer is due: only a new first one needs it awake
  // (a wake-up per schedule() cost a context switch per connection deadline).
  if (it == timers_.begin()) cv_.notify_one();
  return id;
}

bool SystemClock::cancel(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = due_by_id_.find(id);
  if (it == due_by_id_.end()) return false;
  timers_.erase({it->second, id});
  due_by_id_.erase(it);
  return true;
}

void SystemClock::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (timers_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = timers_.begin();
    // A copy: wait_until() reads its deadline again after waking, and by then cancel()
    // may have erased the timer that held it.
    const MonoTime due = first->first.first;
    if (due > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, due);
      continue;
    }
    auto fn = std::move(first->second);
    due_by_id_.erase(first->first.second);
    timers_.erase(first);
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace lcc
