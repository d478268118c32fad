// LCC_INVARIANT (common/invariant.h): a kept invariant costs nothing and counts nothing;
// a broken one is counted and logged in release mode, and aborts in abort mode (every
// test executable under ctest, where LCC_INVARIANT_ABORT=1).
#include "common/invariant.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace lcc {
namespace {

TEST(Invariant, UnderCtestABrokenInvariantAborts) {
  const char* v = std::getenv("LCC_INVARIANT_ABORT");
  if (v == nullptr || std::strcmp(v, "1") != 0) GTEST_SKIP() << "run outside ctest (LCC_INVARIANT_ABORT unset)";
  EXPECT_TRUE(invariantAborts());
}

TEST(Invariant, AKeptInvariantIsTrueAndCountsNothing) {
  setInvariantAbortForTest(false);
  const auto before = invariantFailures();
  int evaluated = 0;
  EXPECT_TRUE(LCC_INVARIANT(++evaluated == 1, "evaluated once"));
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(invariantFailures(), before);
}

TEST(Invariant, InReleaseModeABrokenOneIsCountedAndTheCallerTakesItsWayOut) {
  setInvariantAbortForTest(false);
  const auto before = invariantFailures();
  int turns = 0;
  for (int i = 0;; ++i) {
    if (!LCC_INVARIANT(i < 3, "the loop ends within three turns")) break;
    ++turns;
  }
  EXPECT_EQ(turns, 3);
  EXPECT_EQ(invariantFailures(), before + 1);
}

TEST(InvariantDeathTest, InAbortModeABrokenOneAbortsNamingWhatBroke) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setInvariantAbortForTest(true);
        (void)LCC_INVARIANT(1 + 1 == 3, "arithmetic holds");
      },
      "");
}

}  // namespace
}  // namespace lcc
