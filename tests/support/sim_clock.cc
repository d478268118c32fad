#include "support/sim_clock.h"

namespace lcc::testing {

SimClock::SimClock(WallTime start) : wall_(start) {}

WallTime SimClock::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wall_;
}

MonoTime SimClock::monoNow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return MonoTime(std::chrono::duration_cast<MonoTime::duration>(mono_));
}

TimerId SimClock::schedule(Millis delay, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  TimerId id = next_id_++;
  Millis due = mono_ + (delay.count() < 0 ? Millis(0) : delay);
  timers_.emplace(std::make_pair(due, id), std::move(fn));
  due_by_id_.emplace(id, due);
  return id;
}

bool SimClock::cancel(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = due_by_id_.find(id);
  if (it == due_by_id_.end()) return false;
  timers_.erase({it->second, id});
  due_by_id_.erase(it);
  return true;
}

void SimClock::advance(Millis d) {
  std::unique_lock<std::mutex> lock(mu_);
  const Millis target = mono_ + d;
  for (;;) {
    auto first = timers_.begin();
    if (first == timers_.end() || first->first.first > target) break;
    Millis step = first->first.first - mono_;
    mono_ = first->first.first;
    wall_ += step;
    auto fn = std::move(first->second);
    due_by_id_.erase(first->first.second);
    timers_.erase(first);
    lock.unlock();
    fn();
    lock.lock();
  }
  wall_ += target - mono_;
  mono_ = target;
}

void SimClock::setWall(WallTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  wall_ = t;
}

std::size_t SimClock::pendingTimers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timers_.size();
}

}  // namespace lcc::testing
