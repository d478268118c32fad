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

// Found by uns_qm_fuzz and botm_link_fuzz (fuzz/corpus/uns_qm/year-24.xml,
// fuzz/corpus/botm_link/year-24.xml): mt="0024-05-01T11:58:00Z" was read, then written
// as "24-05-01T11:58:00Z", which no reader takes: a set the UNS spooled was refused by
// its QM. Every time parseTime() returns is written back to the same time.
TEST(TimeUtil, EveryParsedTimeFormatsBackToItself) {
  for (const char* text : {"0024-05-01T11:58:00Z", "0000-01-01T00:00:00Z", "0946-05-01T11:58:00Z",
                           "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z", "253402300799", "0"}) {
    const auto t = parseTime(text);
    ASSERT_TRUE(t.has_value()) << text;
    EXPECT_EQ(parseTime(formatRfc3339(*t)), t) << text << " -> " << formatRfc3339(*t);
  }
  EXPECT_EQ(formatRfc3339(parseTime("0024-05-01T11:58:00Z").value()), "0024-05-01T11:58:00Z");
  // Out of the four-digit years: refused when read, clamped when written.
  for (const char* bad : {"0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "253402300800", "999999999999"}) {
    EXPECT_FALSE(parseTime(bad).has_value()) << bad;
  }
  EXPECT_EQ(formatRfc3339(kMaxRfc3339Seconds + 1000), "9999-12-31T23:59:59Z");
  EXPECT_EQ(formatRfc3339(kMinRfc3339Seconds - 1000), "0000-01-01T00:00:00Z");
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
