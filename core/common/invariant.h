// invariant.h — LCC_INVARIANT(cond, what): a condition our own code guarantees, checked
// where a loop or a walk would otherwise be capped silently (docs/design-decisions.md,
// "Invariants fail loudly").
//
// It evaluates to `cond`. When `cond` is false it logs an error naming `what` and the
// file and line, counts the break (invariantFailures(), /metrics
// lcc_invariant_failures_total), and aborts when abort mode is on: always in builds
// without NDEBUG, and in any build when LCC_INVARIANT_ABORT=1 is in the environment
// (ctest sets it for every test executable). Otherwise the caller takes its safe way
// out, so use it as `if (!LCC_INVARIANT(n < bound, "...")) break;`.
//
// Never for external input (hostile bytes, a peer, a disk): those get their error path.
#pragma once

#include <cstdint>

namespace lcc {

// Logs and counts a broken invariant; aborts in abort mode. Returns false otherwise.
bool invariantFailed(const char* what, const char* file, int line);
// Broken invariants since the process started.
std::uint64_t invariantFailures();
// Whether a broken invariant aborts (see above); a test of the release path turns it off.
bool invariantAborts();
void setInvariantAbortForTest(bool on);

}  // namespace lcc

#define LCC_INVARIANT(cond, what) \
  (__builtin_expect(static_cast<bool>(cond), 1) || ::lcc::invariantFailed((what), __FILE__, __LINE__))
