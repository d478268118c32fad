// invariant.cc — the broken-invariant path of LCC_INVARIANT (invariant.h).
#include "common/invariant.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace lcc {
namespace {

std::atomic<std::uint64_t> g_failures{0};

// -1: not decided yet (read the build and the environment at first use).
std::atomic<int> g_abort{-1};

bool abortFromBuildOrEnv() {
#ifndef NDEBUG
  return true;
#else
  const char* v = std::getenv("LCC_INVARIANT_ABORT");
  return v != nullptr && std::strcmp(v, "1") == 0;
#endif
}

}  // namespace

bool invariantAborts() {
  int a = g_abort.load(std::memory_order_relaxed);
  if (a < 0) {
    a = abortFromBuildOrEnv() ? 1 : 0;
    g_abort.store(a, std::memory_order_relaxed);
  }
  return a == 1;
}

void setInvariantAbortForTest(bool on) { g_abort.store(on ? 1 : 0, std::memory_order_relaxed); }

std::uint64_t invariantFailures() { return g_failures.load(std::memory_order_relaxed); }

bool invariantFailed(const char* what, const char* file, int line) {
  g_failures.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("invariant broken: {} ({}:{})", what, file, line);
  if (invariantAborts()) {
    spdlog::default_logger()->flush();
    std::abort();
  }
  return false;
}

}  // namespace lcc
