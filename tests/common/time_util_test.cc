#include "lcc/support/time_util.h"

#include <gtest/gtest.h>

namespace lcc {
namespace {

TEST(TimeUtil, FormatsAndParsesRfc3339) {
  EXPECT_EQ(formatRfc3339(1714564800), "2024-05-01T12:00:00Z");
  EXPECT_EQ(parseTime("2024-05-01T12:00:00Z"), 1714564800);
  EXPECT_EQ(parseTime("2024-05-01T14:00:00+02:00"), 1714564800);
  EXPECT_EQ(parseTime("2024-05-01T12:00:00.250Z"), 1714564800);
  EXPECT_EQ(parseTime("1714564800"), 1714564800);
}

TEST(TimeUtil, RefusesBadTimes) {
  for (const char* bad : {"", "2024-13-01T12:00:00Z", "2024-05-01 12:00", "yesterday", "2024-05-01T12:00:00",
                          "2024-05-01T12:00:00Zjunk", "-5", "99999999999999"}) {
    EXPECT_FALSE(parseTime(bad).has_value()) << bad;
  }
}

TEST(TimeUtil, DurationsAndSizes) {
  EXPECT_EQ(parseDurationMs("250ms"), 250);
  EXPECT_EQ(parseDurationMs("30s"), 30000);
  EXPECT_EQ(parseDurationMs("2h"), 7200000);
  EXPECT_EQ(parseDurationMs("1d"), 86400000);
  EXPECT_EQ(parseDurationMs("15"), 15);
  EXPECT_FALSE(parseDurationMs("5 parsecs"));
  EXPECT_EQ(parseSizeBytes("64KiB"), 65536);
  EXPECT_EQ(parseSizeBytes("50MiB"), 50LL << 20);
  EXPECT_EQ(parseSizeBytes("1GB"), 1000000000LL);
  EXPECT_FALSE(parseSizeBytes("-1"));
  EXPECT_FALSE(parseSizeBytes("lots"));
}

}  // namespace
}  // namespace lcc
