// wait.h — waiting, bounded, for a condition a test can observe (never a sleep for a
// time that only hopes the condition holds).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace lcc::testing {

// True once `cond` holds; false after 20 s without it.
inline bool waitFor(const std::function<bool()>& cond) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace lcc::testing
