#include "lcc/support/time_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

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

// The formatter before it was written by hand (gmtime_r + snprintf), as the reference.
std::string referenceRfc3339(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(std::clamp(unix_seconds, kMinRfc3339Seconds, kMaxRfc3339Seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

TEST(TimeUtil, HandWrittenFormatterMatchesGmtime) {
  std::vector<std::int64_t> table = {0, -1, 1, 59, 60, 86399, 86400, -86400, -86401, 951782400 /* 2000-02-29 */,
                                     951868800, 1714564800, 4107542400 /* 2100-03-01 */, kMinRfc3339Seconds,
                                     kMinRfc3339Seconds + 1, kMaxRfc3339Seconds, kMaxRfc3339Seconds - 1,
                                     kMinRfc3339Seconds - 1, kMaxRfc3339Seconds + 1, INT64_MIN, INT64_MAX};
  for (const char* text : {"0024-05-01T11:58:00Z", "0024-02-29T00:00:00Z", "0100-03-01T00:00:00Z",
                           "1600-02-29T23:59:59Z", "1899-12-31T23:59:59Z", "9999-12-31T23:59:59Z",
                           "0000-02-29T12:00:00Z", "0000-12-31T23:59:59Z"}) {
    table.push_back(parseTime(text).value());
  }
  // Every day boundary of a 400-year cycle, plus a pseudo-random second in each week.
  std::uint64_t x = 88172645463325252ull;
  for (std::int64_t d = -146097 * 2; d <= 146097 * 2; d += 1) {
    table.push_back(d * 86400);
    if (d % 7 == 0) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      table.push_back(d * 86400 + static_cast<std::int64_t>(x % (7 * 86400)));
    }
  }
  for (std::int64_t t = kMinRfc3339Seconds; t < kMaxRfc3339Seconds; t += 86400 * 97 + 3607) table.push_back(t);
  for (std::int64_t t : table) {
    const std::string want = referenceRfc3339(t);
    ASSERT_EQ(formatRfc3339(t), want) << t;
    std::string appended = "x";
    appendRfc3339(appended, t);
    ASSERT_EQ(appended, "x" + want) << t;
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
