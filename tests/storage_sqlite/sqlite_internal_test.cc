// storage-sqlite internals that a store test cannot reach: the one SQLite-code →
// Status mapping, and the provider-list codec on damaged bytes.
#include <gtest/gtest.h>

#include <random>

#include "record_codec.h"
#include "sqlite_db.h"

namespace lcc::plugins::sqlite {
namespace {

TEST(SqliteStatusTest, ResultCodesMapToStatusCodes) {
  struct Case {
    int rc;
    StatusCode code;
  };
  const Case cases[] = {
      {SQLITE_CORRUPT, StatusCode::kCorruption},      {SQLITE_NOTADB, StatusCode::kCorruption},
      {SQLITE_IOERR_FSYNC, StatusCode::kIOError},     {SQLITE_IOERR_WRITE, StatusCode::kIOError},
      {SQLITE_FULL, StatusCode::kIOError},            {SQLITE_CANTOPEN, StatusCode::kIOError},
      {SQLITE_READONLY, StatusCode::kIOError},        {SQLITE_BUSY, StatusCode::kBusy},
      {SQLITE_LOCKED, StatusCode::kBusy},             {SQLITE_CONSTRAINT_UNIQUE, StatusCode::kInvalidArgument},
      {SQLITE_TOOBIG, StatusCode::kInvalidArgument},  {SQLITE_INTERRUPT, StatusCode::kAborted},
      {SQLITE_MISUSE, StatusCode::kInternal},         {SQLITE_ERROR, StatusCode::kInternal},
      {SQLITE_OK, StatusCode::kInternal},  // a success code is a caller bug, never OK
  };
  for (const auto& c : cases) {
    Status s = sqliteStatus(c.rc, nullptr, "/x/queue.sqlite: apply");
    EXPECT_EQ(s.code(), c.code) << c.rc;
    EXPECT_NE(s.message().find("/x/queue.sqlite: apply: "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("(sqlite " + std::to_string(c.rc) + ")"), std::string::npos) << s.message();
  }
}

std::vector<FetchErrorEntry> someErrors() {
  FetchErrorEntry e;
  e.notice.key = UrlKey{0xffffffffu, std::string("http://x/\x00\xff", 11), "text/html"};
  e.notice.browse = "";
  e.notice.mtime = -5;
  e.notice.size = ~std::uint64_t{0};
  e.code = ErrorCode::kTooLarge;
  e.http_status = -1;
  e.message = "too large";
  e.when = fromUnixMillis(-1000);
  FetchErrorEntry f;
  f.notice.op = UrlOp::kDelete;
  return {e, f};
}

TEST(RecordCodecTest, ListsRoundTripAnyBytes) {
  const std::vector<std::string> prefixes = {"", std::string("\x00\x01\xff", 3), std::string(100000, 'p')};
  EXPECT_EQ(decodeStringList(encodeStringList(prefixes)), prefixes);
  EXPECT_EQ(decodeStringList(encodeStringList({})), std::vector<std::string>{});
  auto errors = someErrors();
  EXPECT_EQ(decodeErrorList(encodeErrorList(errors)), errors);
}

TEST(RecordCodecTest, DamagedBytesAreRefusedNeverMisread) {
  const std::string good = encodeErrorList(someErrors());
  // Every truncation, and trailing junk, is refused.
  for (std::size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(decodeErrorList(good.substr(0, n))) << n;
  EXPECT_FALSE(decodeErrorList(good + "x"));
  EXPECT_FALSE(decodeStringList(std::string("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)));  // huge count
  // Random flips: refused or decoded, never a crash or a huge allocation.
  std::mt19937 rng(1);
  for (int i = 0; i < 20000; ++i) {
    std::string bad = good;
    bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    (void)decodeErrorList(bad);
    (void)decodeStringList(bad);
  }
}

}  // namespace
}  // namespace lcc::plugins::sqlite
